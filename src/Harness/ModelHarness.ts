/**
 * A harness driven by a language model: any `@effect/ai` `LanguageModel` layer (a provider, or an
 * embedder's own) decides which bash commands to run; each one runs through the `Bash` executor
 * and shows as a live terminal card.
 *
 * The loop is ours: `@effect/ai` 0.37 resolves tool calls for one model call only and gives a
 * handler neither the call id nor a way to stream output. So each step streams the model's raw
 * parts (`disableToolCallResolution: true`), runs the calls itself, appends the results to the
 * history and asks again, until the model answers without calling a tool.
 *
 * When a card opens: at the complete `tool-call` part, not at `tool-params-start`. Zed reads a
 * card's `terminal_info` only from its first `tool_call`, and the card's title is the exact command,
 * which is unknown until the parameters are complete. The calls of one model response run one after
 * another once the response has ended; each card opens `pending` while the user is asked (the
 * harness waits until the card's event has been taken by the bridge before asking, so the client
 * knows the card the `session/request_permission` names), then
 * turns `in_progress` (`ToolCallRunning`) when the command starts, receives its output live
 * (`ToolOutput`, keyed by the model's call id), and closes with the result the model also gets.
 *
 * Turn endings: `end_turn` (the model answered), `max_tokens` (finish reason `length`),
 * `refusal` (`content-filter`), `max_turn_requests` (the cap on model calls per prompt),
 * `cancelled` (the model stream is interrupted — which aborts its HTTP request — and a running
 * command gets the cancel through `RunOptions.cancel`, so its card still gets its final update).
 * A provider failure (HTTP error, refused connection, malformed stream) ends the turn with a message
 * and `end_turn`; what was said stays in the history and the session stays usable.
 */
import type * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Bash } from "../Bash/Bash.js"
import * as Intent from "../Presentation/Intent.js"
import * as BashTools from "../Tools/Bash/BashTools.js"
import type { Tool, ToolOutcome, Toolset } from "../Tools/Tool.js"
import { Harness, type HarnessSession, type PromptBlock, type SessionContext } from "./Harness.js"
import { HarnessEvent, type StopReason } from "./HarnessEvent.js"
import * as ModelTools from "./ModelTools.js"
import * as Modes from "./Modes.js"
import * as SystemPrompt from "./SystemPrompt.js"
import * as InvalidToolCall from "../Model/InvalidToolCall.js"
import * as ProviderError from "../Model/ProviderError.js"

export interface Options<R = Bash> {
  /**
   * The tools the model is offered, opened once per session (default: the bash tools,
   * `BashTools.toolset`). Merge your own with `Toolset.merge(BashTools.toolset, Toolset.toolset(…))`.
   */
  readonly tools?: Toolset<R>
  /** Replaces the default system prompt ({@link SystemPrompt.make}); a function receives the session's facts. */
  readonly systemPrompt?: string | ((context: SystemPrompt.Context) => string)
  /** The most model calls one prompt may make before the turn ends with `max_turn_requests` (default 50). */
  readonly maxTurnRequests?: number
  /** Runs every command without asking the user (no `session/request_permission`). */
  readonly approveAll?: boolean
}

/** The default cap on model calls per prompt. */
export const DEFAULT_MAX_TURN_REQUESTS = 50

/**
 * Events a turn buffers ahead of the bridge. An output event holds at most one pipe read (64 KiB),
 * so this bounds a turn's backlog to a few MiB; the executor buffers as many chunks of its own.
 */
export const TURN_EVENTS_CAPACITY = 32

interface Emit {
  (event: HarnessEvent): Effect.Effect<void>
  /** Emits `event` and waits until the consumer of the turn's stream has taken it and asked for the next one. */
  readonly delivered: (event: HarnessEvent) => Effect.Effect<void>
}

/** A mark in a turn's event queue that completes when the consumer pulls past it. */
class Barrier {
  constructor(readonly passed: Deferred.Deferred<void>) {}
}

/** What the loop reads of a stream part. Decoded parts have these fields, and so do the raw parts of a chunk that failed to decode. */
interface RawPart {
  readonly type: string
  readonly [key: string]: unknown
}

type Metadata = Record<string, Record<string, unknown> | undefined>

/** One piece of the assistant's message, in the order it started. */
type Item =
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

type CallItem = Extract<Item, { kind: "call" }>

interface Step {
  readonly items: Array<Item>
  finish: string | undefined
  /** Why the step failed, for the user; the turn ends. */
  failure: string | undefined
}

interface Outcome {
  readonly result: string
  readonly isFailure: boolean
}

const stringField = (part: RawPart, key: string): string => (typeof part[key] === "string" ? part[key] : "")

const metadataOf = (part: RawPart): Metadata =>
  typeof part.metadata === "object" && part.metadata !== null ? part.metadata as Metadata : {}

// Provider metadata (e.g. a reasoning signature) goes back as the prompt part's provider options,
// which have the same `{ provider: { … } }` shape.
const mergeMetadata = (a: Metadata, b: Metadata): Metadata => {
  const out: Metadata = { ...a }
  for (const [key, value] of Object.entries(b)) out[key] = { ...a[key], ...value }
  return out
}

/** Folds one part into the step, emitting what the user should see now. */
const consumePart = (step: Step, open: Map<string, Item>, part: RawPart, emit: Emit): Effect.Effect<void> => {
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

const truncate = (s: string, max = 1000) => (s.length > max ? `${s.slice(0, max)}…` : s)

const describeUnknown = (error: unknown): string => {
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
const recoverChunk = (error: AiError.AiError): ReadonlyArray<RawPart> | undefined => {
  if (error._tag !== "MalformedOutput" || !ParseResult.isParseError(error.cause)) return undefined
  const actual: unknown = error.cause.issue.actual
  const parts: ReadonlyArray<unknown> = Chunk.isChunk(actual) ? Chunk.toReadonlyArray(actual) : Array.isArray(actual) ? actual : []
  const raw = parts.filter((p): p is RawPart => typeof p === "object" && p !== null && typeof (p as RawPart).type === "string")
  return raw.some((p) => p.type === "tool-call") ? raw : undefined
}

const describeFailure = (cause: Cause.Cause<AiError.AiError>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return truncate(Cause.pretty(cause))
  return truncate(ProviderError.describe(failure.value))
}

const stopReasonOf = (finish: string | undefined): StopReason =>
  finish === "length" ? "max_tokens" : finish === "content-filter" ? "refusal" : "end_turn"

/** The assistant's message for the history; `calls` are the tool calls that get results. */
const assistantMessage = (items: ReadonlyArray<Item>, withCalls: boolean): ReadonlyArray<Prompt.Message> => {
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

const toolMessage = (results: ReadonlyArray<{ readonly call: CallItem; readonly outcome: Outcome }>): ReadonlyArray<Prompt.Message> =>
  results.length === 0 ? [] : [Prompt.makeMessage("tool", {
    content: results.map(({ call, outcome }) =>
      Prompt.makePart("tool-result", { id: call.id, name: call.name, result: outcome.result, isFailure: outcome.isFailure, providerExecuted: false })
    )
  })]

const append = (history: Ref.Ref<Prompt.Prompt>, messages: ReadonlyArray<Prompt.Message>) =>
  messages.length === 0 ? Effect.void : Ref.update(history, (h) => Prompt.merge(h, Prompt.fromMessages(messages)))

/** The user's text; blocks the harness cannot read are named so the model knows they were there. */
const userText = (blocks: ReadonlyArray<PromptBlock>): string =>
  blocks.map((b) => (b._tag === "Text" ? b.text : `[an attached ${b.type} block is not supported by this agent]`)).join("\n")

const NOT_RUN_CANCELLED: Outcome = { result: "The user cancelled the turn before this call ran: it did not run.", isFailure: true }
const REJECTED: Outcome = {
  result: "The user rejected this command: it did not run. Do not retry it unchanged; ask the user or take another approach.",
  isFailure: true
}

const encodeMessage = Schema.encodeSync(Prompt.Message)
const decodeMessage = Schema.decodeUnknownEither(Prompt.Message)

/** The history a persisted session left; a message that does not decode is dropped (and logged), the rest kept. */
const restoreHistory = (memory: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const messages: Array<Prompt.Message> = []
    for (const item of memory) {
      const decoded = decodeMessage(item)
      if (Either.isRight(decoded)) messages.push(decoded.right)
      else yield* Effect.logWarning(`a persisted history message does not decode; dropped: ${decoded.left.message.slice(0, 300)}`)
    }
    return Prompt.fromMessages(messages)
  })

/** A background task's card events, forwarded into the session's background stream. */
const openSession = (
  options: Options<any>,
  model: LanguageModel.Service,
  openTools: Toolset["open"],
  context: SessionContext
) =>
  Effect.gen(function*() {
    const { client, cwd: sessionCwd, restore } = context
    const maxTurnRequests = Math.max(1, options.maxTurnRequests ?? DEFAULT_MAX_TURN_REQUESTS)
    // A restored session continues where its shell was (a `cd` persists) and with its history.
    const tools = yield* openTools({ cwd: restore?.cwd ?? sessionCwd, additionalDirectories: context.additionalDirectories })
    // Modes when the tools run under a sandbox (the bash tools): a mode is a profile and a rule for asking.
    const modes = tools.sandbox === undefined ? undefined : yield* Modes.make(tools.sandbox, Modes.modelModes(options.approveAll === true))
    const modelTools = ModelTools.make(tools.tools)
    const history = yield* Ref.make(yield* restoreHistory(restore?.memory ?? []))
    const alwaysAllow = yield* Ref.make(false)
    const turnLock = yield* Effect.makeSemaphore(1)
    const facts = SystemPrompt.context(sessionCwd, modelTools.names)
    const system = typeof options.systemPrompt === "string"
      ? options.systemPrompt
      : (options.systemPrompt ?? SystemPrompt.make)(facts)

    // Card ids are the model's call ids; a model that reuses an id gets a suffixed card id, so two
    // cards (and two client terminals) never share one.
    const usedIds = new Set<string>(restore?.callIds ?? [])
    const cardId = (id: string) => {
      let candidate = id === "" ? "call" : id
      for (let n = 2; usedIds.has(candidate); n++) candidate = `${id}~${n}`
      usedIds.add(candidate)
      return candidate
    }

    const runTool = (callId: string, tool: Tool, args: unknown, cancel: Deferred.Deferred<void>, emit: Emit) =>
      Effect.gen(function*() {
        const cwd = yield* tools.cwd
        // An embedder's tool that throws must still give its call a card and the model a result
        // (a call left without a result in the history makes every later request fail).
        const presentation = yield* Effect.try(() => tool.presentCall(args, { cwd })).pipe(
          Effect.catchAll((error) =>
            Effect.as(
              Effect.logWarning(`tool ${tool.name}: presentCall threw: ${describeUnknown(error.error)}`),
              Intent.GenericCall.make({ title: tool.name, kind: "other", input: args })
            ))
        )
        // A sandboxed tool follows the mode of this moment (Ask: full access, asking; Auto and
        // Read-only: sandboxed, not asking); any other tool asks unless --approve-all.
        const modeAsks = tool.sandboxed === true && modes !== undefined ? yield* modes.asks : options.approveAll !== true
        const ask = modeAsks && (tool.requiresPermission?.(args) ?? true) && !(yield* Ref.get(alwaysAllow))
        // This call's own Stop (a client's per-call cancel): raced with the turn's cancel below, it
        // stops the call alone; the model gets the call's result and the turn goes on.
        const stop = yield* Deferred.make<void>()
        const stopCall = Deferred.complete(stop, Effect.void).pipe(Effect.asVoid)
        // The card must be on the wire before the permission request that names it.
        yield* (ask ? emit.delivered : emit)(HarnessEvent.ToolCallStarted({ callId, presentation, pending: ask, cancel: stopCall }))
        if (ask) {
          // A client should answer `cancelled` after `session/cancel`; one that does not must not
          // hold the turn.
          const decision = yield* client.requestPermission({ callId, presentation }).pipe(
            Effect.raceFirst(Effect.as(Effect.raceFirst(Deferred.await(cancel), Deferred.await(stop)), "cancelled" as const))
          )
          if (decision === "reject" || decision === "cancelled") {
            const note = decision === "reject" ? "Rejected: the command did not run." : "Cancelled: the command did not run."
            yield* emit(HarnessEvent.ToolCallCompleted({ callId, presentation: Intent.failure(note, Intent.callContent(presentation)) }))
            return decision === "reject" ? REJECTED : NOT_RUN_CANCELLED
          }
          if (decision === "allow_always") yield* Ref.set(alwaysAllow, true)
          yield* emit(HarnessEvent.ToolCallRunning({ callId }))
        }
        const outcome: ToolOutcome = yield* Effect.suspend(() =>
          tool.handle(args, {
            callId,
            cwd,
            cancel: Effect.raceFirst(Deferred.await(cancel), Deferred.await(stop)),
            output: (data, bytes) => emit(HarnessEvent.ToolOutput(bytes === undefined ? { callId, data } : { callId, data, bytes }))
          })
        ).pipe(Effect.catchAllDefect((defect) => Effect.succeed({ text: `The tool ${tool.name} failed: ${describeUnknown(defect)}`, isFailure: true })))
        const result = yield* Effect.try(() => tool.presentResult(args, outcome.text, { cwd, isFailure: outcome.isFailure })).pipe(
          Effect.orElseSucceed(() => Intent.failure(outcome.text))
        )
        yield* emit(HarnessEvent.ToolCallCompleted({ callId, presentation: result }))
        if (outcome.changedFiles !== undefined) {
          const changed = yield* outcome.changedFiles.pipe(Effect.catchAllDefect(() => Effect.succeed(Intent.NO_CHANGES)))
          if (!Intent.isEmpty(changed)) yield* emit(HarnessEvent.ToolCallFilesChanged({ callId, changed }))
        }
        return { result: outcome.text, isFailure: outcome.isFailure } satisfies Outcome
      })

    const runCall = (call: CallItem, cancel: Deferred.Deferred<void>, emit: Emit): Effect.Effect<Outcome> =>
      Effect.suspend(() => {
        const callId = cardId(call.id)
        const decoded = call.invalid !== undefined ? Either.left(call.invalid) : modelTools.decodeCall(call.name, call.params)
        if (Either.isLeft(decoded)) {
          return Effect.as(
            Effect.zipRight(
              emit(HarnessEvent.ToolCallStarted({ callId, presentation: ModelTools.presentInvalidCall(call.name, call.params), pending: false })),
              emit(HarnessEvent.ToolCallCompleted({ callId, presentation: Intent.failure(decoded.left) }))
            ),
            { result: decoded.left, isFailure: true }
          )
        }
        return runTool(callId, decoded.right.tool, decoded.right.args, cancel, emit)
      })

    /** One model call: streams the response to the user and collects it. */
    const modelStep = (prompt: Prompt.Prompt, cancel: Deferred.Deferred<void>, emit: Emit) =>
      Effect.gen(function*() {
        const step: Step = { items: [], finish: undefined, failure: undefined }
        const open = new Map<string, Item>()
        const exit = yield* model.streamText({ prompt, toolkit: modelTools.toolkit, disableToolCallResolution: true }).pipe(
          // Interrupting the stream interrupts the provider's request (the HTTP call is aborted).
          Stream.interruptWhen(Deferred.await(cancel)),
          Stream.runForEach((part) => consumePart(step, open, part as unknown as RawPart, emit)),
          Effect.exit
        )
        if (Exit.isFailure(exit)) {
          const error = Cause.failureOption(exit.cause)
          const recovered = Option.isSome(error) ? recoverChunk(error.value) : undefined
          if (recovered !== undefined) {
            for (const part of recovered) yield* consumePart(step, open, part, emit)
          } else {
            step.failure = `The model request failed: ${describeFailure(exit.cause)}`
          }
        }
        return step
      })

    const runTurn = (blocks: ReadonlyArray<PromptBlock>, cancel: Deferred.Deferred<void>, emit: Emit) =>
      Effect.gen(function*() {
        yield* append(history, [Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: userText(blocks) })] })])
        for (let requests = 0;; requests++) {
          if (yield* Deferred.isDone(cancel)) return yield* emit(HarnessEvent.TurnEnded({ stopReason: "cancelled" }))
          if (requests >= maxTurnRequests) return yield* emit(HarnessEvent.TurnEnded({ stopReason: "max_turn_requests" }))
          const step = yield* modelStep(Prompt.setSystem(yield* Ref.get(history), system), cancel, emit)
          const cancelled = yield* Deferred.isDone(cancel)
          // A failed or cancelled response keeps its words but not its calls: a call in the history
          // needs a result, and these never ran (nor were they shown).
          const calls = step.failure === undefined && !cancelled
            ? step.items.filter((item): item is CallItem => item.kind === "call")
            : []
          yield* append(history, assistantMessage(step.items, calls.length > 0))
          if (step.failure !== undefined) {
            const spoke = step.items.some((item) => item.kind === "text" && item.text !== "")
            yield* emit(HarnessEvent.AgentText({ text: `${spoke ? "\n\n" : ""}⚠️ ${step.failure}` }))
            return yield* emit(HarnessEvent.TurnEnded({ stopReason: cancelled ? "cancelled" : "end_turn" }))
          }
          if (cancelled) return yield* emit(HarnessEvent.TurnEnded({ stopReason: "cancelled" }))
          if (calls.length === 0) {
            const stopReason = stopReasonOf(step.finish)
            // Silence would look like a hang; a provider that drops events it cannot parse answers this way.
            if (stopReason === "end_turn" && step.items.every((item) => item.kind !== "call" && item.text === "")) {
              yield* emit(HarnessEvent.AgentText({ text: `⚠️ The model returned an empty response (finish reason: ${step.finish ?? "none"}).` }))
            }
            return yield* emit(HarnessEvent.TurnEnded({ stopReason }))
          }
          const results: Array<{ call: CallItem; outcome: Outcome }> = []
          for (const call of calls) {
            const outcome = (yield* Deferred.isDone(cancel)) ? NOT_RUN_CANCELLED : yield* runCall(call, cancel, emit)
            results.push({ call, outcome })
          }
          yield* append(history, toolMessage(results))
        }
      })

    const prompt: HarnessSession["prompt"] = (blocks, { cancel }) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        // A Deferred in the mailbox is a barrier: it completes when the consumer pulls past the
        // events before it (the stream is pulled one element at a time). Bounded: when the client
        // reads slowly the bridge stops pulling, `emit` waits, and so does the tool's output
        // callback and, through the executor's own bounded queue, the command's pipe.
        const events = yield* Mailbox.make<HarnessEvent | Barrier>({ capacity: TURN_EVENTS_CAPACITY })
        const emit: Emit = Object.assign((event: HarnessEvent) => Effect.asVoid(events.offer(event)), {
          delivered: (event: HarnessEvent) =>
            Effect.gen(function*() {
              const barrier = new Barrier(yield* Deferred.make<void>())
              yield* events.offerAll([event, barrier])
              yield* Deferred.await(barrier.passed)
            })
        })
        yield* turnLock.withPermits(1)(runTurn(blocks, cancel, emit)).pipe(
          // A bug must still end the turn, with a message rather than silence.
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause) ? Effect.void : Effect.zipRight(
              emit(HarnessEvent.AgentText({ text: `⚠️ Internal error: ${truncate(Cause.pretty(cause))}` })),
              emit(HarnessEvent.TurnEnded({ stopReason: "end_turn" }))
            )),
          Effect.ensuring(events.end),
          Effect.forkScoped
        )
        return Mailbox.toStream(events).pipe(
          Stream.mapEffect((item) =>
            item instanceof Barrier ? Effect.as(Deferred.succeed(item.passed, undefined), Option.none()) : Effect.succeed(Option.some(item))
          ),
          Stream.filterMap((item) => item)
        )
      }))

    // The history as JSON, one encoded message per entry (it only grows: the store keeps the new ones).
    const snapshot = Effect.gen(function*() {
      const messages = (yield* Ref.get(history)).content
      return { cwd: yield* tools.cwd, memory: messages.map((m) => encodeMessage(m)) }
    })

    return { prompt, background: tools.background, commands: [], snapshot, ...(modes === undefined ? {} : { modes }) } satisfies HarnessSession
  })

/** The model harness over a toolset (default: the bash tools) and any `LanguageModel` (see {@link layer}). */
export const make = <R = Bash>(options: Options<R> = {}): Effect.Effect<Harness["Type"], never, R | LanguageModel.LanguageModel> =>
  Effect.gen(function*() {
    const model = yield* LanguageModel.LanguageModel
    const toolset = (options.tools ?? BashTools.toolset) as Toolset<R>
    const context = yield* Effect.context<R>()
    const openTools: Toolset["open"] = (session) => Effect.provide(toolset.open(session), context)
    return Harness.of({ openSession: (sessionContext) => openSession(options, model, openTools, sessionContext) })
  })

/**
 * The model harness as a layer: provide what its tools need (for the bash tools, `Bash`, e.g.
 * `BashLive.layer()`) and a `LanguageModel` (a provider's layer, or your own made with
 * `LanguageModel.make`).
 *
 * ```ts
 * Bridge.Server.serveStdio({ agentInfo }).pipe(
 *   Effect.provide(Harness.ModelHarness.layer({ maxTurnRequests: 20 })),
 *   Effect.provide(Layer.merge(Bash.BashLive.layer(), myModelLayer))
 * )
 * ```
 */
export const layer = <R = Bash>(options: Options<R> = {}): Layer.Layer<Harness, never, R | LanguageModel.LanguageModel> =>
  Layer.effect(Harness, make(options))
