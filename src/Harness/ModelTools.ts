/**
 * The tools a model is offered by the model harness — `Bash`, `BashOutput`, `KillBash` — as
 * `@effect/ai` tool definitions, how their calls are validated, and how the two task tools are
 * shown (the `Bash` call itself is shown by `BashTool`).
 *
 * Why lenient parameters: in `@effect/ai` 0.37 a tool call whose parameters fail the tool's Schema
 * makes the whole response stream fail, so the model would never hear about its mistake. Each tool
 * therefore DECODES any JSON object while ADVERTISING the real JSON Schema (a `jsonSchema`
 * annotation), and {@link decodeCall} validates the call itself, turning a bad call into a failed
 * tool result the model can correct on its next step.
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { BashArgs } from "../Bash/BashArgs.js"
import * as BashTool from "../Bash/BashTool.js"
import type { TaskOutput } from "../Bash/Bash.js"
import { type CallPresentation, type ResultPresentation, text } from "../Presentation/Presentation.js"

/** The arguments of `BashOutput` and `KillBash`. */
export const TaskArgs = Schema.Struct({
  task_id: Schema.String.annotations({ description: "The id of a background task of this session, e.g. bg-1." })
}).annotations({ identifier: "TaskArgs" })
export type TaskArgs = typeof TaskArgs.Type

export const BASH_OUTPUT_DESCRIPTION = `Reads the new output of a background task started with Bash (run_in_background: true).

- Returns only the output produced since the previous BashOutput call for that task (the first call returns everything so far), ANSI-stripped and bounded like a Bash result.
- The last line says whether the task is still running ([background task ID running]) or how it ended ([background task ID ended] followed by its [exit code: N] or [killed by signal: NAME] line).
- Does not wait: call it again later to see more.`

export const KILL_BASH_DESCRIPTION = `Stops a background task of this session (started with Bash run_in_background: true).

- Sends SIGTERM to the task's whole process tree, then SIGKILL 2 s later if it is still alive.
- Returns the task's final status line. Killing a task that already ended just reports how it ended.`

/**
 * A Schema that accepts any JSON object but describes itself as `schema`: providers receive the
 * real JSON Schema, the stream decoder never rejects a call.
 */
const lenient = <A, I>(schema: Schema.Schema<A, I>) =>
  Schema.Struct({}, { key: Schema.String, value: Schema.Unknown }).annotations({
    jsonSchema: Tool.getJsonSchemaFromSchemaAst(schema.ast)
  })

export const BashModelTool = Tool.make(BashTool.NAME, { description: BashTool.DESCRIPTION }).setParameters(lenient(BashArgs))
export const BashOutputModelTool = Tool.make("BashOutput", { description: BASH_OUTPUT_DESCRIPTION }).setParameters(lenient(TaskArgs))
export const KillBashModelTool = Tool.make("KillBash", { description: KILL_BASH_DESCRIPTION }).setParameters(lenient(TaskArgs))

/** The toolkit offered to the model. */
export const toolkit = Toolkit.make(BashModelTool, BashOutputModelTool, KillBashModelTool)
export type Tools = typeof toolkit.tools

/**
 * The toolkit as `streamText` wants it. The harness always passes `disableToolCallResolution: true`
 * and runs calls itself (it needs the call id to stream output into the card), so `handle` is never
 * called; it exists to satisfy the type.
 */
export const withoutHandlers: Toolkit.WithHandler<Tools> = {
  tools: toolkit.tools,
  handle: (name) => Effect.die(new Error(`ModelTools: tool ${String(name)} is run by the harness, not by a handler`))
}

/** The names offered, for messages and the system prompt. */
export const names: ReadonlyArray<string> = Object.keys(toolkit.tools)

/** A validated call. */
export type Call =
  | { readonly _tag: "Bash"; readonly args: BashArgs }
  | { readonly _tag: "BashOutput"; readonly args: TaskArgs }
  | { readonly _tag: "KillBash"; readonly args: TaskArgs }

const decodeBash = Schema.decodeUnknownEither(BashArgs, { onExcessProperty: "error" })
const decodeTask = Schema.decodeUnknownEither(TaskArgs, { onExcessProperty: "error" })

const formatError = (error: ParseResult.ParseError) => ParseResult.TreeFormatter.formatErrorSync(error)

/**
 * Validates a model's call: `Right` with the typed call, or `Left` with the message the model gets
 * back as a failed tool result (what was wrong, and how to call it right).
 */
export const decodeCall = (name: string, params: unknown): Either.Either<Call, string> => {
  switch (name) {
    case "Bash":
      return Either.mapBoth(decodeBash(params), {
        onLeft: (e) => `Invalid arguments for Bash: ${formatError(e)}\nExpected {"command": string, "description"?: string, "timeout_ms"?: positive integer, "workdir"?: string, "run_in_background"?: boolean}.`,
        onRight: (args): Call => ({ _tag: "Bash", args })
      })
    case "BashOutput":
    case "KillBash":
      return Either.mapBoth(decodeTask(params), {
        onLeft: (e) => `Invalid arguments for ${name}: ${formatError(e)}\nExpected {"task_id": string}.`,
        onRight: (args): Call => ({ _tag: name, args })
      })
    default:
      return Either.left(`Unknown tool "${name}". The available tools are: ${names.join(", ")}.`)
  }
}

/** The card of a call that could not be run as asked (bad arguments, unknown tool). */
export const presentInvalidCall = (name: string, params: unknown): CallPresentation => ({
  title: `${name} (invalid call)`,
  kind: "other",
  content: [],
  input: params
})

export const presentTaskToolCall = (call: Exclude<Call, { _tag: "Bash" }>): CallPresentation => ({
  title: call._tag === "BashOutput" ? `Read output of ${call.args.task_id}` : `Kill ${call.args.task_id}`,
  kind: call._tag === "BashOutput" ? "read" : "execute",
  content: [],
  input: call.args
})

/** A plain text result card. */
export const presentText = (status: ResultPresentation["status"], message: string): ResultPresentation => ({
  status,
  content: [text(message)]
})

/** The last line of a finished task's result: its exit or signal line. */
const endLine = (resultText: string) => resultText.trimEnd().split("\n").at(-1) ?? ""

/** What `BashOutput` returns to the model. */
export const renderTaskOutput = (read: TaskOutput): string => {
  const status = read.running
    ? `[background task ${read.info.id} running]`
    : `[background task ${read.info.id} ended]\n${read.info.result ? endLine(read.info.result.text) : ""}`.trimEnd()
  return read.output === "" ? `(no new output)\n${status}` : `${read.output.replace(/\n?$/, "\n")}${status}`
}
