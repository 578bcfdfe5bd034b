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
 * - plain (a presentation without `terminal`): its text content, in every mode.
 *
 * The form of a call is fixed when it starts. All emission of a session goes through one lock, and
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
import type { ExitStatus } from "../Bash/ExitStatus.js"
import type { HarnessEvent } from "../Harness/HarnessEvent.js"
import type { CallPresentation, ResultPresentation, TextContent } from "../Presentation/Presentation.js"
import { Capabilities } from "./Capabilities.js"
import { consoleFence } from "./ConsoleFence.js"
import { DEFAULT_DISPLAY_BUDGET_BYTES, LiveOutput } from "./LiveOutput.js"
import type { SessionNotification, SessionUpdate, ToolCallContent, ToolCallStatus } from "./SessionUpdate.js"
import { terminalContent, textBlock, textContent } from "./SessionUpdate.js"

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

type Form =
  | { readonly _tag: "Card"; readonly outputKey: "terminal_output" | "terminal_output_delta" }
  | { readonly _tag: "Text" }
  | { readonly _tag: "Plain" }

interface CallState {
  readonly form: Form
  /** The call's content as sent on `tool_call` (terminal block included for a card). */
  readonly content: ReadonlyArray<ToolCallContent>
  readonly live: LiveOutput
  /** Output accepted by the budget, not yet sent. */
  pending: string
  lastEmitAt: number
  timer: Fiber.RuntimeFiber<void> | undefined
}

const texts = (content: ReadonlyArray<TextContent>): Array<ToolCallContent> => content.map((c) => textContent(c.text))

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

    const onOutput = (callId: string, data: string) =>
      Effect.gen(function*() {
        const state = calls.get(callId)
        if (state === undefined || state.form._tag !== "Card") return
        state.pending += state.live.push(data)
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

    const onStarted = (callId: string, presentation: CallPresentation, pending: boolean) =>
      Effect.gen(function*() {
        if (calls.has(callId)) return yield* Effect.logWarning(`tool call ${callId} started twice; ignored`)
        const mode = yield* capabilities.get
        const form: Form = presentation.terminal === undefined
          ? { _tag: "Plain" }
          : mode._tag === "Card"
          ? { _tag: "Card", outputKey: mode.outputKey }
          : { _tag: "Text" }
        const content = form._tag === "Card"
          ? [...texts(presentation.content), terminalContent(callId)]
          : texts(presentation.content)
        calls.set(callId, {
          form,
          content,
          live: new LiveOutput(config.displayBudgetBytes, config.displayTailBytes),
          pending: "",
          lastEmitAt: Number.NEGATIVE_INFINITY,
          timer: undefined
        })
        yield* send({
          sessionUpdate: "tool_call",
          toolCallId: callId,
          title: presentation.title,
          kind: presentation.kind,
          status: pending ? "pending" : "in_progress",
          content,
          ...(presentation.input !== undefined ? { rawInput: presentation.input } : {}),
          ...(form._tag === "Card" && presentation.terminal !== undefined
            ? { _meta: { terminal_info: { terminal_id: callId, cwd: presentation.terminal.cwd } } }
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

    const onCompleted = (callId: string, result: ResultPresentation) =>
      Effect.gen(function*() {
        const state = calls.get(callId)
        if (state === undefined) return yield* Effect.logWarning(`tool call ${callId} completed but was never started; ignored`)
        yield* finishOutput(callId, state, result.terminal?.output)
        const rawOutput = result.facts !== undefined ? { rawOutput: result.facts } : {}
        switch (state.form._tag) {
          case "Card":
            return yield* send({
              sessionUpdate: "tool_call_update",
              toolCallId: callId,
              status: result.status,
              // The card's content exactly as `tool_call` sent it (an update's content replaces
              // the list); a result without a terminal adds what it has to say.
              content: result.terminal !== undefined ? state.content : [...texts(result.content), terminalContent(callId)],
              ...rawOutput,
              // A result without a terminal still closes the terminal the card opened.
              _meta: { terminal_exit: exitMeta(callId, result.terminal?.exit) }
            })
          case "Text":
            return yield* send({
              sessionUpdate: "tool_call_update",
              toolCallId: callId,
              status: result.status,
              content: result.terminal !== undefined ? [textContent(consoleFence(result.terminal.transcript))] : texts(result.content),
              ...rawOutput
            })
          case "Plain":
            // A call that started without a terminal may still end with one (a background start
            // that died at once): it is shown as text, since the client never saw a terminal id.
            return yield* send({
              sessionUpdate: "tool_call_update",
              toolCallId: callId,
              status: result.status,
              content: result.terminal !== undefined
                ? [...texts(result.content), textContent(consoleFence(result.terminal.transcript))]
                : texts(result.content),
              ...rawOutput
            })
        }
      })

    const closeOne = (callId: string, state: CallState, signal: string) =>
      Effect.gen(function*() {
        yield* finishOutput(callId, state, undefined)
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
            return onOutput(event.callId, event.data)
          case "ToolCallCompleted":
            return onCompleted(event.callId, event.presentation)
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
  static readonly layerWith = (config: Partial<MappingConfig>): Layer.Layer<Mapping, never, Capabilities> =>
    Layer.effect(
      Mapping,
      Effect.map(Capabilities, (capabilities) => ({
        forSession: (sessionId, emit) => makeSessionMapper({ ...defaultConfig, ...config }, capabilities, sessionId, emit)
      }))
    )

  static readonly layer: Layer.Layer<Mapping, never, Capabilities> = Mapping.layerWith({})
}
