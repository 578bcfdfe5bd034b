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
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Bash } from "../Bash/Bash.js"
import * as Intent from "../Presentation/Intent.js"
import * as BashTools from "../Tools/Bash/BashTools.js"
import type { Toolset } from "../Tools/Tool.js"
import { Harness, type HarnessSession, type PromptBlock, type SessionContext } from "./Harness.js"
import { HarnessEvent } from "./HarnessEvent.js"
import {
  assistantMessage,
  type CallItem,
  consumePart,
  describeFailure,
  type Item,
  type Outcome,
  type RawPart,
  recoverChunk,
  type Step,
  stopReasonOf,
  toolMessage,
  truncate
} from "./ModelResponse.js"
import * as ModelTools from "./ModelTools.js"
import * as Modes from "./Modes.js"
import * as SystemPrompt from "./SystemPrompt.js"
import * as ToolCall from "./ToolCall.js"

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

/** A mark in a turn's event queue that completes when the consumer pulls past it. */
class Barrier {
  constructor(readonly passed: Deferred.Deferred<void>) {}
}

const append = (history: Ref.Ref<Prompt.Prompt>, messages: ReadonlyArray<Prompt.Message>) =>
  messages.length === 0 ? Effect.void : Ref.update(history, (h) => Prompt.merge(h, Prompt.fromMessages(messages)))

/** The user's text; blocks the harness cannot read are named so the model knows they were there. */
const userText = (blocks: ReadonlyArray<PromptBlock>): string =>
  blocks.map((b) => (b._tag === "Text" ? b.text : `[an attached ${b.type} block is not supported by this agent]`)).join("\n")

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

/** One session: its tools, modes, history and the prompt loop. */
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

    const callSession: ToolCall.CallSession = { client, cwd: tools.cwd, modes, approveAll: options.approveAll === true, alwaysAllow }
    // Card ids are the model's call ids; a model that reuses an id gets a suffixed card id, so two
    // cards (and two client terminals) never share one.
    const usedIds = new Set<string>(restore?.callIds ?? [])
    const cardId = (id: string) => {
      let candidate = id === "" ? "call" : id
      for (let n = 2; usedIds.has(candidate); n++) candidate = `${id}~${n}`
      usedIds.add(candidate)
      return candidate
    }

    const runCall = (call: CallItem, cancel: Deferred.Deferred<void>, emit: ToolCall.Emit): Effect.Effect<Outcome> =>
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
        return ToolCall.run(callSession, callId, decoded.right.tool, decoded.right.args, cancel, emit)
      })

    /** One model call: streams the response to the user and collects it. */
    const modelStep = (prompt: Prompt.Prompt, cancel: Deferred.Deferred<void>, emit: ToolCall.Emit) =>
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

    const runTurn = (blocks: ReadonlyArray<PromptBlock>, cancel: Deferred.Deferred<void>, emit: ToolCall.Emit) =>
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
            const outcome = (yield* Deferred.isDone(cancel)) ? ToolCall.NOT_RUN_CANCELLED : yield* runCall(call, cancel, emit)
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
        const emit: ToolCall.Emit = Object.assign((event: HarnessEvent) => Effect.asVoid(events.offer(event)), {
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
    return Harness.of({
      ...(toolset.prepare === undefined ? {} : { prepare: Effect.provide(toolset.prepare, context) }),
      openSession: (sessionContext) => openSession(options, model, openTools, sessionContext)
    })
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
