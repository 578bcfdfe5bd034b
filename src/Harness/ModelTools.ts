/**
 * A session's tools as the model sees them: `@effect/ai` tool definitions for `streamText`, and the
 * validation of the model's calls.
 *
 * Why lenient parameters: in `@effect/ai` 0.37 a tool call whose parameters fail the tool's Schema
 * makes the whole response stream fail, so the model would never hear about its mistake. Each tool
 * therefore DECODES any JSON object while ADVERTISING the real JSON Schema (a `jsonSchema`
 * annotation), and {@link decodeCall} validates the call itself, turning a bad call into a failed
 * tool result the model can correct on its next step.
 */
import * as AiTool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Intent from "../Presentation/Intent.js"
import type { Tool } from "../Tools/Tool.js"

/**
 * A Schema that accepts any JSON object but describes itself as `schema`: providers receive the
 * real JSON Schema, the stream decoder never rejects a call.
 */
const lenient = <A, I>(schema: Schema.Schema<A, I>) =>
  Schema.Struct({}, { key: Schema.String, value: Schema.Unknown }).annotations({
    jsonSchema: AiTool.getJsonSchemaFromSchemaAst(schema.ast)
  })

export interface ModelTools {
  /** The toolkit as `streamText` wants it. */
  readonly toolkit: Toolkit.WithHandler<Record<string, AiTool.Any>>
  readonly names: ReadonlyArray<string>
  /** Validates a model's call: the tool and its typed arguments, or what to tell the model. */
  readonly decodeCall: (name: string, params: unknown) => Either.Either<{ readonly tool: Tool; readonly args: unknown }, string>
}

const formatError = (error: ParseResult.ParseError) => ParseResult.TreeFormatter.formatErrorSync(error)

/** A JSON Schema of the parameters, as the model should have called them. */
const expected = (tool: Tool): string => JSON.stringify(AiTool.getJsonSchemaFromSchemaAst(tool.parameters.ast))

export const make = (tools: ReadonlyArray<Tool>): ModelTools => {
  const byName = new Map<string, Tool>()
  // The first tool of a name wins, as in the list the model is shown.
  for (const tool of tools) if (!byName.has(tool.name)) byName.set(tool.name, tool)
  const definitions = [...byName.values()].map((tool) =>
    AiTool.make(tool.name, { description: tool.description }).setParameters(lenient(tool.parameters))
  )
  const kit = Toolkit.make(...definitions)
  const decoders = new Map([...byName].map(([name, tool]) => [name, Schema.decodeUnknownEither(tool.parameters, { onExcessProperty: "error" })]))
  const names = [...byName.keys()]
  return {
    // The harness always passes `disableToolCallResolution: true` and runs calls itself (it needs
    // the call id to stream output into the card), so `handle` is never called.
    toolkit: {
      tools: kit.tools,
      handle: (name) => Effect.die(new Error(`ModelTools: tool ${String(name)} is run by the harness, not by a handler`))
    } as Toolkit.WithHandler<Record<string, AiTool.Any>>,
    names,
    decodeCall: (name, params) => {
      const tool = byName.get(name)
      if (tool === undefined) return Either.left(`Unknown tool "${name}". The available tools are: ${names.join(", ")}.`)
      return Either.mapBoth(decoders.get(name)!(params), {
        onLeft: (e) => `Invalid arguments for ${name}: ${formatError(e)}\nExpected arguments matching this JSON Schema: ${expected(tool)}`,
        onRight: (args) => ({ tool, args })
      })
    }
  }
}

/** The card of a call that could not be run as asked (bad arguments, unknown tool). */
export const presentInvalidCall = (name: string, params: unknown): Intent.CallIntent =>
  Intent.GenericCall.make({ title: `${name} (invalid call)`, kind: "other", input: params })
