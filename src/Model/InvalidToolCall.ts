/**
 * A tool call the model got wrong, passed on instead of failing the turn.
 *
 * `LanguageModel`'s decoding of a `tool-call` part accepts only a toolkit tool's name and params
 * that decode with its parameters Schema; anything else fails the whole stream (`MalformedOutput`)
 * and the model never hears about its mistake. So our providers check each finished call
 * themselves, and when it would not decode (unknown tool, arguments that are not JSON, arguments the
 * Schema rejects) emit an `error` part carrying an `InvalidToolCall` instead of the `tool-call`.
 * The stream goes on; the harness answers the call with a failed tool result, so the model can
 * correct itself on the next step:
 *
 * ```ts
 * const invalid = InvalidToolCall.fromPart(part)   // on a part of type "error"
 * if (invalid) history += InvalidToolCall.toPromptParts(invalid, "…message for the model…")
 * ```
 *
 * For a known tool name, `tool-params-start` (and deltas) with the same `id` came before, so a card
 * that opened early must be closed as failed.
 */
import * as Prompt from "@effect/ai/Prompt"

export interface InvalidToolCall {
  readonly _tag: "InvalidToolCall"
  /** The call id the model gave (or one we made up when it gave none). */
  readonly id: string
  /** The tool name exactly as the model wrote it. */
  readonly name: string
  /** The raw arguments text. */
  readonly arguments: string
  readonly reason: "unknown-tool" | "invalid-json" | "invalid-params"
  /** What was wrong, written for the model (it is meant to go back as the tool result). */
  readonly message: string
}

export const make = (fields: Omit<InvalidToolCall, "_tag">): InvalidToolCall => ({ _tag: "InvalidToolCall", ...fields })

/** The `InvalidToolCall` an `error` stream part carries, if it is one. */
export const fromPart = (part: { readonly type: string; readonly error?: unknown }): InvalidToolCall | undefined => {
  if (part.type !== "error") return undefined
  const e = part.error as Partial<InvalidToolCall> | null | undefined
  return e !== null && typeof e === "object" && e._tag === "InvalidToolCall" && typeof e.id === "string" && typeof e.name === "string"
    ? (e as InvalidToolCall)
    : undefined
}

/**
 * The history entries for a call answered with a failure: the assistant's call (params are the
 * raw arguments text; our providers send a string params verbatim when it is a JSON object, else
 * wrap it so strict chat templates still get an object) and the failed result.
 */
export const toPromptParts = (call: InvalidToolCall, result: string = call.message) => ({
  toolCall: Prompt.makePart("tool-call", { id: call.id, name: call.name, params: call.arguments, providerExecuted: false }),
  toolResult: Prompt.makePart("tool-result", { id: call.id, name: call.name, isFailure: true, result, providerExecuted: false })
})
