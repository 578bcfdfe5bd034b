/**
 * Presentation → ACP. Turns the `HarnessEvent`s of one session into `session/update` params, in the
 * form the client can show (see `/spec/terminal-card.md`):
 *
 * - card (client advertised `terminal_output` or `terminal_output_delta`): `tool_call` with a
 *   terminal content block and `_meta.terminal_info`; live output as `tool_call_update`s carrying
 *   ONLY `_meta.<outputKey>`; a final update with status, the same content list, `rawOutput` facts
 *   and `_meta.terminal_exit`.
 * - text (no capability): the description on `tool_call`, then the rendered result once, in a
 *   ```` ```console ```` fence. Never a terminal block, never `_meta.terminal_*`.
 * - plain (a generic or diff intent): its text or diff content and its locations, in every mode.
 *
 * The form of a call is fixed when it starts, by its call intent's tag (and, for a terminal, the
 * client's capability); its end is rendered by its result intent's tag. Both switches are
 * exhaustive, so a new intent does not compile until it is rendered here. All emission of a session goes through one lock, and
 * a call's final update first flushes its pending output, so one call's updates never reorder.
 * Live output is coalesced per call (leading edge, then at most one update per `coalesceMs`) and
 * bounded by the display budget (`LiveOutput`).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { HarnessEvent } from "../Harness/HarnessEvent.js"
import * as Intent from "../Presentation/Intent.js"
import type { ExitStatus } from "../Terminal/ExitStatus.js"
import { Capabilities } from "./Capabilities.js"
import { DEFAULT_DISPLAY_BUDGET_BYTES, LiveOutput, type OutputChunk } from "./LiveOutput.js"
import type { SessionNotification, SessionUpdate, ToolCallContent, ToolCallStatus } from "./SessionUpdate.js"
import { callBody, changedContent, finalContent, type Form, locationsOf, texts } from "./CardContent.js"
import { terminalContent, textBlock } from "./SessionUpdate.js"

/** What an ended call's card shows. */
interface Shown {
  readonly content: ReadonlyArray<ToolCallContent>
  readonly locations: ReadonlyArray<Intent.Location>
}

/** How many ended calls keep their content for a late changed-files update. */
const MAX_ENDED = 256

export interface MappingConfig {
  /** Stream output while a command runs; `false` sends it all in one update before the exit. */
  readonly liveOutput: boolean
  /** At most one output update per call per this many milliseconds. */
  readonly coalesceMs: number
  /** The most output one card shows (the skip note aside). */
  readonly displayBudgetBytes: number
  /** How much of the end is kept once the budget's head is used up (default: an eighth of the budget). */
  readonly displayTailBytes?: number
}

export const defaultConfig: MappingConfig = {
  liveOutput: true,
  coalesceMs: 50,
  displayBudgetBytes: DEFAULT_DISPLAY_BUDGET_BYTES
}

/** The mapper of one session. */
export interface SessionMapper {
  /** Maps one event, emitting zero or more updates. */
  readonly consume: (event: HarnessEvent) => Effect.Effect<void>
  /** Sends every call's pending (coalesced) output now. */
  readonly flush: Effect.Effect<void>
  /**
   * Closes still-open cards, e.g. after a cancelled turn whose harness could not report the end:
   * pending output, then `failed` with `terminal_exit { exit_code: null, signal }`. `callIds`
   * restricts it to those calls (a cancelled turn must not close background cards).
   */
  readonly closeOpen: (options?: { readonly signal?: string; readonly callIds?: ReadonlyArray<string> }) => Effect.Effect<void>
  /** Ids of calls whose card is still open. */
  readonly openCalls: Effect.Effect<ReadonlyArray<string>>
}

interface CallState {
  readonly form: Form
  /** The call's content as sent on `tool_call` (terminal block included for a card). */
  readonly content: ReadonlyArray<ToolCallContent>
  /** The call's own text content (a description), which a plain card re-states at its end. */
  readonly callTexts: ReadonlyArray<ToolCallContent>
  /** The locations the card shows (an update's `locations` replaces them). */
  readonly locations: ReadonlyArray<Intent.Location>
  readonly live: LiveOutput
  /** Output accepted by the budget, not yet sent. */
  pending: string
  lastEmitAt: number
  timer: Fiber.RuntimeFiber<void> | undefined
}

const exitMeta = (terminalId: string, exit: ExitStatus | undefined) => ({
  terminal_id: terminalId,
  exit_code: exit?._tag === "Exited" ? exit.code : null,
  signal: exit?._tag === "Signaled" ? exit.signal : null
})

const makeSessionMapper = (
  config: MappingConfig,
  capabilities: Capabilities["Type"],
  sessionId: string,
  emit: (params: SessionNotification) => Effect.Effect<void>
): Effect.Effect<SessionMapper, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lock = yield* Effect.makeSemaphore(1)
    const timers = yield* FiberSet.make<void, never>()
    const calls = new Map<string, CallState>()
    /** What each ended call shows now, for the files it changed that follow its end (the newest few hundred). */
    const ended = new Map<string, Shown>()
    const remember = (callId: string, shown: Shown) => {
      ended.set(callId, shown)
      if (ended.size > MAX_ENDED) ended.delete(ended.keys().next().value!)
    }
    const locked = <A>(effect: Effect.Effect<A>) => lock.withPermits(1)(Effect.suspend(() => effect))
    const send = (update: SessionUpdate) => emit({ sessionId, update })

    const cancelTimer = (state: CallState) => {
      const timer = state.timer
      state.timer = undefined
      return timer === undefined ? Effect.void : Fiber.interruptFork(timer)
    }

    const sendOutput = (callId: string, state: CallState, data: string) =>
      state.form._tag !== "Card" || data === ""
        ? Effect.void
        : send({
          sessionUpdate: "tool_call_update",
          toolCallId: callId,
          _meta: { [state.form.outputKey]: { terminal_id: callId, data } }
        })

    const flushPending = (callId: string, state: CallState) =>
      Effect.gen(function*() {
        yield* cancelTimer(state)
        if (state.pending === "") return
        const data = state.pending
        state.pending = ""
        state.lastEmitAt = yield* Clock.currentTimeMillis
        yield* sendOutput(callId, state, data)
      })

    const onOutput = (callId: string, chunk: OutputChunk) =>
      Effect.gen(function*() {
        const state = calls.get(callId)
        if (state === undefined || state.form._tag !== "Card") return
        state.pending += state.live.push(chunk)
        if (!config.liveOutput || state.pending === "" || state.timer !== undefined) return
        const wait = state.lastEmitAt + config.coalesceMs - (yield* Clock.currentTimeMillis)
        if (wait <= 0) return yield* flushPending(callId, state)
        // The timer re-checks under the lock that its call is still the same open call: a final
        // update that raced it has already flushed and removed the state.
        state.timer = yield* FiberSet.run(
          timers,
          Effect.sleep(wait).pipe(Effect.zipRight(locked(Effect.suspend(() => {
            if (calls.get(callId) !== state) return Effect.void
            state.timer = undefined
            return flushPending(callId, state)
          }))))
        )
      })

    const onStarted = (callId: string, call: Intent.CallIntent, pending: boolean) =>
      Effect.gen(function*() {
        if (calls.has(callId)) return yield* Effect.logWarning(`tool call ${callId} started twice; ignored`)
        const mode = yield* capabilities.get
        const form: Form = call._tag !== "Terminal"
          ? { _tag: "Plain" }
          : mode._tag === "Card"
          ? { _tag: "Card", outputKey: mode.outputKey }
          : { _tag: "Text" }
        const body = callBody(call)
        const content = form._tag === "Card" ? [...body, terminalContent(callId)] : body
        calls.set(callId, {
          form,
          content,
          callTexts: call._tag === "Diff" ? [] : texts(call.content),
          locations: call.locations,
          live: new LiveOutput(config.displayBudgetBytes, config.displayTailBytes),
          pending: "",
          lastEmitAt: Number.NEGATIVE_INFINITY,
          timer: undefined
        })
        yield* send({
          sessionUpdate: "tool_call",
          toolCallId: callId,
          title: call.title,
          kind: call.kind,
          status: pending ? "pending" : "in_progress",
          content,
          ...locationsOf(call.locations),
          ...(call.input !== undefined ? { rawInput: call.input } : {}),
          ...(form._tag === "Card" && call._tag === "Terminal"
            ? { _meta: { terminal_info: { terminal_id: callId, cwd: call.cwd } } }
            : {})
        })
      })

    /** Sends what is left of the output (pending, the budget's tail) and removes the call. */
    const finishOutput = (callId: string, state: CallState, fallbackOutput: string | undefined) =>
      Effect.gen(function*() {
        calls.delete(callId)
        // Nothing was streamed by the harness: the card still shows the whole output, once.
        if (!state.live.received && fallbackOutput !== undefined) state.pending += state.live.push(fallbackOutput)
        state.pending += state.live.finish()
        yield* flushPending(callId, state)
      })

    const onCompleted = (callId: string, result: Intent.ResultIntent) =>
      Effect.gen(function*() {
        const state = calls.get(callId)
        if (state === undefined) return yield* Effect.logWarning(`tool call ${callId} completed but was never started; ignored`)
        yield* finishOutput(callId, state, result._tag === "Terminal" ? result.output : undefined)
        const content = finalContent(state.form, state, callId, result)
        remember(callId, { content, locations: result._tag !== "Terminal" && result.locations.length > 0 ? result.locations : state.locations })
        yield* send({
          sessionUpdate: "tool_call_update",
          toolCallId: callId,
          status: Intent.statusOf(result),
          content,
          ...(result._tag !== "Terminal" ? locationsOf(result.locations) : {}),
          ...(result.facts !== undefined ? { rawOutput: result.facts } : {}),
          // A result without a terminal still closes the terminal the card opened.
          ...(state.form._tag === "Card"
            ? { _meta: { terminal_exit: exitMeta(callId, result._tag === "Terminal" ? result.exit : undefined) } }
            : {})
        })
      })

    const closeOne = (callId: string, state: CallState, signal: string) =>
      Effect.gen(function*() {
        yield* finishOutput(callId, state, undefined)
        remember(callId, { content: state.content, locations: state.locations })
        const status: ToolCallStatus = "failed"
        yield* send({
          sessionUpdate: "tool_call_update",
          toolCallId: callId,
          status,
          content: state.content,
          rawOutput: { exit_code: null, signal },
          ...(state.form._tag === "Card"
            ? { _meta: { terminal_exit: { terminal_id: callId, exit_code: null, signal } } }
            : {})
        })
      })

    /** Adds the files an ended call changed after its content; the content list is replaced, so it is all re-sent. */
    const onFilesChanged = (callId: string, changed: Intent.ChangedFiles) => {
      const shown = ended.get(callId)
      if (shown === undefined) return Effect.logWarning(`files changed by ${callId}, which has not ended; ignored`)
      if (Intent.isEmpty(changed)) return Effect.void
      const next: Shown = {
        content: [...shown.content, ...changedContent(changed)],
        // `locations` replaces the card's list too: keep what it showed, then the files.
        locations: [...shown.locations, ...changed.locations.filter((l) => !shown.locations.some((s) => s.path === l.path))]
      }
      remember(callId, next)
      return send({ sessionUpdate: "tool_call_update", toolCallId: callId, content: next.content, ...locationsOf(next.locations) })
    }

    const consume = (event: HarnessEvent): Effect.Effect<void> =>
      locked(Effect.suspend((): Effect.Effect<void> => {
        switch (event._tag) {
          case "AgentText":
            return event.text === "" ? Effect.void : send({ sessionUpdate: "agent_message_chunk", content: textBlock(event.text) })
          case "AgentThought":
            return event.text === "" ? Effect.void : send({ sessionUpdate: "agent_thought_chunk", content: textBlock(event.text) })
          case "ToolCallStarted":
            return onStarted(event.callId, event.presentation, event.pending)
          case "ToolCallRunning":
            return calls.has(event.callId)
              ? send({ sessionUpdate: "tool_call_update", toolCallId: event.callId, status: "in_progress" })
              : Effect.void
          case "ToolOutput":
            return onOutput(event.callId, event)
          case "ToolCallCompleted":
            return onCompleted(event.callId, event.presentation)
          case "ToolCallFilesChanged":
            return onFilesChanged(event.callId, event.changed)
          case "TurnEnded":
            return flushAll
        }
      }))

    const flushAll: Effect.Effect<void> = Effect.suspend(() =>
      Effect.forEach([...calls], ([callId, state]) => flushPending(callId, state), { discard: true })
    )

    return {
      consume,
      flush: locked(flushAll),
      closeOpen: (options) =>
        locked(Effect.suspend(() => {
          const signal = options?.signal ?? "SIGTERM"
          const ids = options?.callIds
          const targets = [...calls].filter(([callId]) => ids === undefined || ids.includes(callId))
          return Effect.forEach(targets, ([callId, state]) => closeOne(callId, state, signal), { discard: true })
        })),
      openCalls: locked(Effect.sync(() => [...calls.keys()]))
    } satisfies SessionMapper
  })

export class Mapping extends Context.Tag("dsh-acp/Bridge/Mapping")<Mapping, {
  /**
   * A mapper for one session; `emit` sends one `session/update` params object (it is called under
   * the session's lock, in order). Closing the scope stops pending coalescing timers.
   */
  readonly forSession: (
    sessionId: string,
    emit: (params: SessionNotification) => Effect.Effect<void>
  ) => Effect.Effect<SessionMapper, never, Scope.Scope>
}>() {
  static readonly makeWith = (config: Partial<MappingConfig>): Effect.Effect<Context.Tag.Service<Mapping>, never, Capabilities> =>
    Effect.map(Capabilities, (capabilities) => ({
      forSession: (sessionId, emit) => makeSessionMapper({ ...defaultConfig, ...config }, capabilities, sessionId, emit)
    }))

  static readonly layerWith = (config: Partial<MappingConfig>): Layer.Layer<Mapping, never, Capabilities> =>
    Layer.effect(Mapping, Mapping.makeWith(config))

  static readonly layer: Layer.Layer<Mapping, never, Capabilities> = Mapping.layerWith({})
}
