/**
 * An agent with tools of its own next to dsh-acp's bash tools: a file read (shown as a read card
 * with the file's location) and a file write (shown as a diff), served over ACP with dsh-acp's model
 * harness and bridge. A tool is a name, a description, a parameters Schema, a handler and a
 * presenter; the presenter returns a render intent and the bridge draws it.
 *
 * The model is a tiny offline one made with `LanguageModel.make`: `read PATH` calls ReadFile,
 * `write PATH TEXT` calls WriteFile, anything else runs as Bash; then it reports the last result.
 *
 *   node --import tsx examples/own-tools.ts      # speaks ACP on stdin/stdout
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { resolve } from "node:path"
import { Bash, Bridge, Harness, Presentation, Tools } from "../src/index.js"

const { Intent } = Presentation

/** A file read: a generic card of kind `read` with the file's location; the model gets the text. */
const ReadFile = Tools.Tool.make({
  name: "ReadFile",
  description: "Reads a text file (a path absolute or relative to the session's directory).",
  parameters: Schema.Struct({ path: Schema.String }),
  requiresPermission: () => false,
  presentCall: ({ path }, { cwd }) =>
    Intent.GenericCall.make({ title: `Read ${path}`, kind: "read", locations: [{ path: resolve(cwd, path) }] }),
  presentResult: ({ path }, text, { cwd, isFailure }) =>
    Intent.GenericResult.make({ status: isFailure ? "failed" : "completed", content: [Intent.text(text)], locations: [{ path: resolve(cwd, path) }] }),
  handle: ({ path }, { cwd }) =>
    Effect.try(() => readFileSync(resolve(cwd, path), "utf8")).pipe(
      Effect.map((text) => ({ text, isFailure: false })),
      Effect.orElseSucceed(() => ({ text: `cannot read ${path}`, isFailure: true }))
    )
})

/**
 * A file write: a diff card (`oldText` from disk, or null for a new file). The presenter is pure:
 * the old text it shows travels in the result text the model reads (a log replays the same card).
 */
const WriteResult = Schema.parseJson(Schema.Struct({ path: Schema.String, oldText: Schema.NullOr(Schema.String), newText: Schema.String }))
const WriteFile = Tools.Tool.make({
  name: "WriteFile",
  description: "Writes a text file, replacing its content. Answers with the file's old and new text as JSON.",
  parameters: Schema.Struct({ path: Schema.String, text: Schema.String }),
  presentCall: ({ path, text }, { cwd }) =>
    Intent.DiffCall.make({ title: `Write ${path}`, diffs: [], locations: [{ path: resolve(cwd, path) }], input: { path, text } }),
  presentResult: (_args, result, { isFailure }) => {
    const decoded = Schema.decodeUnknownOption(WriteResult)(result)
    return decoded._tag === "Some" && !isFailure
      ? Intent.DiffResult.make({ status: "completed", diffs: [decoded.value], locations: [{ path: decoded.value.path }] })
      : Intent.failure(result)
  },
  handle: ({ path, text }, { cwd }) =>
    Effect.try(() => {
      const absolute = resolve(cwd, path)
      const oldText = existsSync(absolute) ? readFileSync(absolute, "utf8") : null
      writeFileSync(absolute, text)
      return Schema.encodeSync(WriteResult)({ path: absolute, oldText, newText: text })
    }).pipe(
      Effect.map((text) => ({ text, isFailure: false })),
      Effect.orElseSucceed(() => ({ text: `cannot write ${path}`, isFailure: true }))
    )
})

const tools = Tools.Tool.merge(Tools.BashTools.toolset, Tools.Tool.toolset(ReadFile, WriteFile))

// --- an offline model that picks a tool from the user's words ---
let calls = 0
const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 }
const say = (text: string): ReadonlyArray<Response.StreamPartEncoded> => [
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: text },
  { type: "text-end", id: "t" },
  { type: "finish", reason: "stop", usage }
]
const callFor = (text: string): { name: string; params: Record<string, string> } => {
  const read = /^read (\S+)$/.exec(text)
  if (read) return { name: "ReadFile", params: { path: read[1]! } }
  const write = /^write (\S+) ([\s\S]*)$/.exec(text)
  if (write) return { name: "WriteFile", params: { path: write[1]!, text: write[2]! } }
  return { name: "Bash", params: { command: text } }
}
const ToolPickingModel = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: () => Effect.die(new Error("only streams")),
    streamText: ({ prompt }) => {
      const last: Prompt.Message | undefined = prompt.content.at(-1)
      if (last?.role === "tool") return Stream.fromIterable(say(`Done (${String(last.content.at(-1)?.result ?? "").length} chars).`))
      const text = last?.role === "user" ? last.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n").trim() : ""
      const { name, params } = callFor(text)
      return Stream.fromIterable<Response.StreamPartEncoded>([
        { type: "tool-call", id: `own-${++calls}`, name, params },
        { type: "finish", reason: "tool-calls", usage }
      ])
    }
  })
)

const program = Bridge.Server.serveStdio({ agentInfo: { name: "own-tools-example", title: "Own tools", version: "0.0.0" } }).pipe(
  Effect.provide(Harness.ModelHarness.layer({ tools, approveAll: true })),
  Effect.provide(Layer.merge(Bash.BashLive.layer(), ToolPickingModel)),
  // stdout is the protocol channel: logs go to stderr.
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)))
)

Effect.runPromise(program).catch((error) => {
  process.stderr.write(`own-tools: ${String(error)}\n`)
  process.exit(1)
})
