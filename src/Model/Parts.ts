/**
 * What both wire providers share once the bytes are parsed: turning a finished tool call into a
 * part `LanguageModel` will accept, and folding a part stream into the parts of `generateText`.
 */
import type * as Response from "@effect/ai/Response"
import type * as Tool from "@effect/ai/Tool"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as InvalidToolCall from "./InvalidToolCall.js"

/**
 * A finished call as a `tool-call` part when `LanguageModel` will decode it, else an `error` part
 * carrying an `InvalidToolCall` (see there for why).
 */
export const finishToolCall = (
  tools: ReadonlyArray<Tool.Any>,
  call: { readonly id: string; readonly name: string; readonly arguments: string }
): Response.StreamPartEncoded => {
  const invalid = (reason: InvalidToolCall.InvalidToolCall["reason"], message: string): Response.StreamPartEncoded => ({
    type: "error",
    error: InvalidToolCall.make({ id: call.id, name: call.name, arguments: call.arguments, reason, message })
  })
  const tool = tools.find((t) => t.name === call.name)
  if (tool === undefined) {
    const known = tools.map((t) => t.name).join(", ")
    return invalid("unknown-tool", `There is no tool named "${call.name}". Available tools: ${known === "" ? "none" : known}.`)
  }
  let params: unknown
  try {
    // Some servers send no arguments at all for a call without parameters.
    params = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments)
  } catch (error) {
    return invalid("invalid-json", `The arguments of ${call.name} are not valid JSON (${(error as Error).message}). Send a JSON object.`)
  }
  const decoded = Schema.decodeUnknownEither(tool.parametersSchema as Schema.Schema<unknown, unknown>)(params)
  if (Either.isLeft(decoded)) {
    return invalid("invalid-params", `Invalid arguments for ${call.name}:\n${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`)
  }
  return { type: "tool-call", id: call.id, name: call.name, params, providerExecuted: false }
}

/** `generateText` from `streamText`: deltas joined into whole text and reasoning parts. */
export const collect = (parts: ReadonlyArray<Response.StreamPartEncoded>): Array<Response.PartEncoded> => {
  const out: Array<Response.PartEncoded> = []
  const open = new Map<string, { type: "text" | "reasoning"; text: string; index: number }>()
  for (const part of parts) {
    switch (part.type) {
      case "text-start":
      case "reasoning-start": {
        const type = part.type === "text-start" ? "text" : "reasoning"
        open.set(`${type}:${part.id}`, { type, text: "", index: out.length })
        out.push({ type, text: "" })
        break
      }
      case "text-delta":
      case "reasoning-delta": {
        const entry = open.get(`${part.type === "text-delta" ? "text" : "reasoning"}:${part.id}`)
        if (entry) {
          entry.text += part.delta
          out[entry.index] = { type: entry.type, text: entry.text }
        }
        break
      }
      case "text-end":
      case "reasoning-end":
      case "tool-params-start":
      case "tool-params-delta":
      case "tool-params-end":
        break
      default:
        out.push(part as Response.PartEncoded)
    }
  }
  return out
}

/** A tool result on the wire: a string verbatim (bash output reads better unquoted), anything else as JSON. */
export const encodeResult = (result: unknown): string => typeof result === "string" ? result : JSON.stringify(result)
