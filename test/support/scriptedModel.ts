/**
 * A scripted `LanguageModel` for tests: each model call plays the next step — a list of raw stream
 * parts, or a function of the request returning a stream (to hang, fail or echo). It goes through
 * `LanguageModel.make`, so the parts are decoded by `@effect/ai` exactly as a provider's would be,
 * and it records every request, so a test can assert what each step sent.
 *
 * ```ts
 * const model = scripted([
 *   [...bashCall("c1", { command: "echo hi" }), finish("tool-calls")],
 *   [...say("done"), finish("stop")]
 * ])
 * // provide model.layer; later: model.requests[1].prompt
 * ```
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"

export type Part = Response.StreamPartEncoded
export type Step = ReadonlyArray<Part> | ((request: LanguageModel.ProviderOptions) => Stream.Stream<Part, AiError.AiError>)

export interface Scripted {
  readonly layer: Layer.Layer<LanguageModel.LanguageModel>
  /** Every request the model received, in order. */
  readonly requests: Array<LanguageModel.ProviderOptions>
}

let ids = 0

export const scripted = (steps: ReadonlyArray<Step>): Scripted => {
  const requests: Array<LanguageModel.ProviderOptions> = []
  const streamText = (request: LanguageModel.ProviderOptions): Stream.Stream<Part, AiError.AiError> => {
    const step = steps[requests.length]
    requests.push(request)
    if (step === undefined) {
      return Stream.fail(new AiError.UnknownError({ module: "ScriptedModel", method: "streamText", description: `no step ${requests.length} in the script` }))
    }
    // One part per chunk, like an SSE provider: a chunk that fails to decode loses only itself.
    return typeof step === "function" ? step(request) : Stream.fromIterable(step).pipe(Stream.rechunk(1))
  }
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      streamText,
      generateText: () => Effect.die(new Error("the scripted model only streams"))
    })
  )
  return { layer, requests }
}

/** A text answer in three deltas-worth of parts. */
export const say = (text: string, id = `t${++ids}`): ReadonlyArray<Part> => [
  { type: "text-start", id },
  { type: "text-delta", id, delta: text },
  { type: "text-end", id }
]

export const think = (text: string, id = `r${++ids}`): ReadonlyArray<Part> => [
  { type: "reasoning-start", id },
  { type: "reasoning-delta", id, delta: text },
  { type: "reasoning-end", id }
]

/** A tool call as a streaming provider sends it: params start, delta, end, then the call. */
export const call = (id: string, name: string, params: unknown): ReadonlyArray<Part> => [
  { type: "tool-params-start", id, name },
  { type: "tool-params-delta", id, delta: JSON.stringify(params) },
  { type: "tool-params-end", id },
  { type: "tool-call", id, name, params }
]

export const bashCall = (id: string, args: Record<string, unknown>) => call(id, "Bash", args)

export const finish = (reason: "stop" | "length" | "content-filter" | "tool-calls" | "error" | "other"): Part => ({
  type: "finish",
  reason,
  usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 }
})

/** The tool results the request carried, by call id. */
export const toolResults = (request: LanguageModel.ProviderOptions): Array<{ id: string; name: string; result: unknown; isFailure: boolean }> =>
  request.prompt.content.flatMap((message: Prompt.Message) =>
    message.role === "tool"
      ? message.content.map((part) => ({ id: part.id, name: part.name, result: part.result, isFailure: part.isFailure }))
      : []
  )

/** The text of the request's last user message. */
export const lastUserText = (request: LanguageModel.ProviderOptions): string => {
  const users = request.prompt.content.filter((m: Prompt.Message) => m.role === "user")
  const last = users.at(-1)
  return last === undefined ? "" : last.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("")
}
