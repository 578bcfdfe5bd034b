/**
 * One model response as the model harness reads it: the stream parts folded into a step (text,
 * reasoning, tool calls, the finish, a failure), a chunk recovered from a decode failure, and the
 * messages the step and its tool results add to the history.
 */
import type * as AiError from "@effect/ai/AiError"
import * as Prompt from "@effect/ai/Prompt"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as InvalidToolCall from "../Model/InvalidToolCall.js"
import * as ProviderError from "../Model/ProviderError.js"
import { HarnessEvent, type StopReason } from "./HarnessEvent.js"

/** What the loop reads of a stream part. Decoded parts have these fields, and so do the raw parts of a chunk that failed to decode. */
export interface RawPart {
  readonly type: string
  readonly [key: string]: unknown
}

export type Metadata = Record<string, Record<string, unknown> | undefined>

/** One piece of the assistant's message, in the order it started. */
export type Item =
  | { readonly kind: "text" | "reasoning"; readonly id: string; text: string; metadata: Metadata }
  | {
    readonly kind: "call"
    readonly id: string
    readonly name: string
    readonly params: unknown
    readonly metadata: Metadata
    /** Set when the provider already found the call invalid (unknown tool, bad JSON): what to tell the model. */
    readonly invalid?: string
  }

export type CallItem = Extract<Item, { kind: "call" }>

export interface Step {
  readonly items: Array<Item>
  finish: string | undefined
  /** Why the step failed, for the user; the turn ends. */
  failure: string | undefined
}

export interface Outcome {
  readonly result: string
  readonly isFailure: boolean
}

export const stringField = (part: RawPart, key: string): string => (typeof part[key] === "string" ? part[key] : "")

export const metadataOf = (part: RawPart): Metadata =>
  typeof part.metadata === "object" && part.metadata !== null ? part.metadata as Metadata : {}

// Provider metadata (e.g. a reasoning signature) goes back as the prompt part's provider options,
// which have the same `{ provider: { … } }` shape.
export const mergeMetadata = (a: Metadata, b: Metadata): Metadata => {
  const out: Metadata = { ...a }
  for (const [key, value] of Object.entries(b)) out[key] = { ...a[key], ...value }
  return out
}

/** Folds one part into the step, emitting what the user should see now. */
export const consumePart = (step: Step, open: Map<string, Item>, part: RawPart, emit: (event: HarnessEvent) => Effect.Effect<void>): Effect.Effect<void> => {
  switch (part.type) {
    case "text-start":
    case "reasoning-start": {
      const kind = part.type === "text-start" ? "text" : "reasoning"
      const item: Item = { kind, id: stringField(part, "id"), text: "", metadata: metadataOf(part) }
      open.set(`${kind}:${item.id}`, item)
      step.items.push(item)
      return Effect.void
    }
    case "text-delta":
    case "reasoning-delta":
    case "text-end":
    case "reasoning-end": {
      const kind = part.type.startsWith("text") ? "text" : "reasoning"
      const key = `${kind}:${stringField(part, "id")}`
      let item = open.get(key)
      if (item === undefined || item.kind === "call") {
        item = { kind, id: stringField(part, "id"), text: "", metadata: {} }
        open.set(key, item)
        step.items.push(item)
      }
      item.metadata = mergeMetadata(item.metadata, metadataOf(part))
      const delta = stringField(part, "delta")
      if (!part.type.endsWith("-delta") || delta === "") return Effect.void
      item.text += delta
      return emit(kind === "text" ? HarnessEvent.AgentText({ text: delta }) : HarnessEvent.AgentThought({ text: delta }))
    }
    case "tool-call":
      // Provider-executed tools are not ours to run (none are offered).
      if (part.providerExecuted !== true) {
        step.items.push({ kind: "call", id: stringField(part, "id"), name: stringField(part, "name"), params: part.params, metadata: metadataOf(part) })
      }
      return Effect.void
    case "finish":
      step.finish = stringField(part, "reason")
      return Effect.void
    case "error": {
      // A call the provider could not decode comes as an error part; it goes back to the model as
      // a failed result it can correct, instead of ending the turn.
      const invalid = InvalidToolCall.fromPart(part)
      if (invalid !== undefined) {
        step.items.push({ kind: "call", id: invalid.id, name: invalid.name, params: invalid.arguments, metadata: {}, invalid: invalid.message })
        return Effect.void
      }
      step.failure = `The model provider reported an error: ${describeUnknown(part.error)}`
      return Effect.void
    }
    default:
      return Effect.void
  }
}

export const truncate = (s: string, max = 1000) => (s.length > max ? `${s.slice(0, max)}…` : s)

export const describeUnknown = (error: unknown): string => {
  if (typeof error === "string") return truncate(error)
  if (error instanceof Error) return truncate(error.message)
  try {
    return truncate(JSON.stringify(error))
  } catch {
    return truncate(String(error))
  }
}

/**
 * The raw parts of a chunk that failed to decode because of a tool call (an unknown tool name, or
 * parameters that are not an object): `@effect/ai` fails the whole stream there, so the loop reads
 * that chunk itself and lets the model hear about its mistake. Parts after that chunk are lost.
 */
export const recoverChunk = (error: AiError.AiError): ReadonlyArray<RawPart> | undefined => {
  if (error._tag !== "MalformedOutput" || !ParseResult.isParseError(error.cause)) return undefined
  const actual: unknown = error.cause.issue.actual
  const parts: ReadonlyArray<unknown> = Chunk.isChunk(actual) ? Chunk.toReadonlyArray(actual) : Array.isArray(actual) ? actual : []
  const raw = parts.filter((p): p is RawPart => typeof p === "object" && p !== null && typeof (p as RawPart).type === "string")
  return raw.some((p) => p.type === "tool-call") ? raw : undefined
}

export const describeFailure = (cause: Cause.Cause<AiError.AiError>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return truncate(Cause.pretty(cause))
  return truncate(ProviderError.describe(failure.value))
}

export const stopReasonOf = (finish: string | undefined): StopReason =>
  finish === "length" ? "max_tokens" : finish === "content-filter" ? "refusal" : "end_turn"

/** The assistant's message for the history; `calls` are the tool calls that get results. */
export const assistantMessage = (items: ReadonlyArray<Item>, withCalls: boolean): ReadonlyArray<Prompt.Message> => {
  const content: Array<Prompt.AssistantMessagePart> = []
  for (const item of items) {
    if (item.kind === "call") {
      if (withCalls) content.push(Prompt.makePart("tool-call", { id: item.id, name: item.name, params: item.params, providerExecuted: false, options: item.metadata }))
    } else if (item.text !== "") {
      content.push(Prompt.makePart(item.kind, { text: item.text, options: item.metadata }))
    }
  }
  return content.length === 0 ? [] : [Prompt.makeMessage("assistant", { content })]
}

export const toolMessage = (results: ReadonlyArray<{ readonly call: CallItem; readonly outcome: Outcome }>): ReadonlyArray<Prompt.Message> =>
  results.length === 0 ? [] : [Prompt.makeMessage("tool", {
    content: results.map(({ call, outcome }) =>
      Prompt.makePart("tool-result", { id: call.id, name: call.name, result: outcome.result, isFailure: outcome.isFailure, providerExecuted: false })
    )
  })]
