/**
 * Records one session into its log as its events reach the bridge: a harness wrapped so that its
 * prompt stream and its background stream are written through, and so that it is opened with the
 * state a restored session left.
 *
 * Writes are kept few: a card's output is folded into what the card shows (bounded by the display
 * budget, as `LiveOutput` bounds it on the wire) and written when the card ends, when the turn
 * ends, past 64 KiB, or a second after output was held back (so a card still running when the
 * agent is killed keeps what it showed); consecutive agent text is one record. After
 * each turn the harness's state (cwd, new memory) is written when it changed.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Harness, HarnessRestore, HarnessSession, PromptBlock } from "../Harness/Harness.js"
import type { HarnessEvent } from "../Harness/HarnessEvent.js"
import { byteLength, DEFAULT_DISPLAY_BUDGET_BYTES, LiveOutput } from "./LiveOutput.js"
import * as SessionLog from "./SessionLog.js"
import type { LogWriter } from "./SessionStore.js"

const FLUSH_BYTES = 64 * 1024
const FLUSH_MS = 1000
/**
 * Room left under the display budget, so a replayed card (head, skip note, tail) fits the replaying
 * mapper's budget whole and is shown exactly as recorded.
 */
const REPLAY_MARGIN = 1024

export interface RecorderOptions {
  readonly log: LogWriter
  /** Set for a session reopened from its log. */
  readonly restore?: HarnessRestore
  /** The mode the session was last switched to, set again when it is reopened. */
  readonly restoreMode?: string
  /** Whether the session already has its title (a restored one that was prompted). */
  readonly titled: boolean
  /** Tells the client the session's title (`session_info_update`). */
  readonly onTitle: (title: string) => Effect.Effect<void>
  readonly displayBudgetBytes?: number
}

export interface Recorder {
  /** The harness to open the session with. */
  readonly harness: Harness["Type"]
  /** Whether any prompt was recorded (an unprompted new session leaves no log behind). */
  readonly prompted: () => boolean
  /** Cards still open (running commands, background tasks). */
  readonly openCalls: () => ReadonlyArray<string>
  /** Writes what is held back (agent text, output), so the log is complete up to now. */
  readonly flush: Effect.Effect<void>
}

interface CallOutput {
  readonly live: LiveOutput
  pending: string
  /** `pending`'s size in bytes, counted as it grows (not re-measured per chunk). */
  pendingBytes: number
  /** A write of `pending` is scheduled. */
  timer: boolean
  /** A background task's card, which outlives the turn. */
  readonly bg: boolean
}

export const make = (inner: Harness["Type"], options: RecorderOptions): Recorder => {
  const { log } = options
  const budget = Math.max(4096, (options.displayBudgetBytes ?? DEFAULT_DISPLAY_BUDGET_BYTES) - REPLAY_MARGIN)
  let titled = options.titled
  let prompted = false
  let text: { readonly tag: "AgentText" | "AgentThought"; value: string } | undefined
  const outputs = new Map<string, CallOutput>()
  let lastCwd = options.restore?.cwd
  let memoryWritten = options.restore?.memory.length ?? 0

  const event = (e: SessionLog.Event, bg: boolean) => log.append({ t: "event", e, ...(bg ? { bg } : {}) })

  const flushText = Effect.suspend(() => {
    const pending = text
    text = undefined
    return pending === undefined ? Effect.void : event({ _tag: pending.tag, text: pending.value }, false)
  })

  const flushOutput = (callId: string, state: CallOutput, bg: boolean, finish: boolean) =>
    Effect.suspend(() => {
      if (finish) state.pending += state.live.finish()
      const data = state.pending
      state.pending = ""
      state.pendingBytes = 0
      return data === "" ? Effect.void : event({ _tag: "ToolOutput", callId, data }, bg)
    })

  const record = (e: HarnessEvent, bg: boolean): Effect.Effect<void> =>
    Effect.suspend(() => {
      switch (e._tag) {
        case "AgentText":
        case "AgentThought": {
          if (text !== undefined && text.tag !== e._tag) return Effect.zipRight(flushText, record(e, bg))
          text = { tag: e._tag, value: (text?.value ?? "") + e.text }
          return text.value.length > FLUSH_BYTES ? flushText : Effect.void
        }
        case "ToolOutput": {
          const state = outputs.get(e.callId)
          if (state === undefined) return event(e, bg)
          const shown = state.live.push(e)
          state.pending += shown
          state.pendingBytes += byteLength(shown)
          if (state.pendingBytes > FLUSH_BYTES) return flushOutput(e.callId, state, bg, false)
          if (state.timer || state.pending === "") return Effect.void
          state.timer = true
          // After the card ended this finds nothing pending: its end wrote it.
          return Effect.asVoid(Effect.forkDaemon(Effect.sleep(FLUSH_MS).pipe(
            Effect.zipRight(Effect.suspend(() => {
              state.timer = false
              return flushOutput(e.callId, state, bg, false)
            }))
          )))
        }
        case "ToolCallStarted":
          outputs.set(e.callId, { live: new LiveOutput(budget), pending: "", pendingBytes: 0, timer: false, bg })
          return Effect.zipRight(flushText, event(e, bg))
        case "ToolCallCompleted": {
          const state = outputs.get(e.callId)
          outputs.delete(e.callId)
          return Effect.zipRight(flushText, state === undefined ? event(e, bg) : Effect.zipRight(flushOutput(e.callId, state, bg, true), event(e, bg)))
        }
        case "ToolCallRunning":
        case "ToolCallFilesChanged":
          return Effect.zipRight(flushText, event(e, bg))
        case "TurnEnded":
          return Effect.zipRight(flushText, log.append({ t: "turnEnd", stopReason: e.stopReason }))
      }
    })

  const flush = Effect.suspend(() =>
    Effect.zipRight(flushText, Effect.forEach([...outputs], ([callId, state]) => flushOutput(callId, state, state.bg, false), { discard: true }))
  )

  /** After a turn: what is pending, then the harness's state when it changed. */
  const afterTurn = (session: HarnessSession, ended: boolean) =>
    Effect.gen(function*() {
      yield* flush
      // The turn's own cards are closed by now (the session closes what its harness left open).
      for (const [callId, state] of outputs) if (!state.bg) outputs.delete(callId)
      if (!ended) yield* log.append({ t: "turnEnd", stopReason: "cancelled" })
      if (session.snapshot === undefined) return
      const state = yield* session.snapshot
      // Memory only grows; a shorter one (a model session continued by the shell harness, which
      // keeps none) adds nothing and must not erase what the log holds.
      const memory = state.memory.slice(memoryWritten)
      if (state.cwd === lastCwd && memory.length === 0) return
      lastCwd = state.cwd
      memoryWritten = Math.max(memoryWritten, state.memory.length)
      yield* log.append({ t: "state", cwd: state.cwd, memory })
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("could not record the end of a turn", cause)))

  const wrap = (session: HarnessSession): HarnessSession => ({
    ...session,
    prompt: (blocks: ReadonlyArray<PromptBlock>, promptOptions) =>
      Stream.unwrap(Effect.gen(function*() {
        prompted = true
        if (!titled) {
          titled = true
          // Before the prompt, so a listing finds the title on the log's second line.
          const title = SessionLog.titleOf(blocks)
          yield* log.append({ t: "title", title })
          yield* options.onTitle(title)
        }
        yield* log.append({ t: "prompt", at: new Date().toISOString(), blocks })
        let ended = false
        return session.prompt(blocks, promptOptions).pipe(
          Stream.tap((e) => {
            if (e._tag === "TurnEnded") ended = true
            return record(e, false)
          }),
          Stream.ensuring(Effect.suspend(() => afterTurn(session, ended)))
        )
      })),
    background: session.background.pipe(Stream.tap((e) => record(e, true))),
    // A mode switch is part of the session: recorded, and set again when it is reopened.
    ...(session.modes === undefined ? {} : {
      modes: {
        ...session.modes,
        set: (modeId: string) => Effect.tap(session.modes!.set(modeId), () => log.append({ t: "mode", mode: modeId }))
      }
    })
  })

  const restoreMode = (session: HarnessSession) => {
    const mode = options.restoreMode
    if (mode === undefined || session.modes === undefined) return Effect.void
    return session.modes.set(mode).pipe(
      Effect.catchAll((error) => Effect.logWarning(`the session's mode ${mode} could not be set again: ${error.message}`))
    )
  }

  return {
    harness: {
      openSession: (context) =>
        inner.openSession(options.restore === undefined ? context : { ...context, restore: options.restore }).pipe(
          Effect.tap(restoreMode),
          Effect.map(wrap)
        )
    },
    prompted: () => prompted,
    openCalls: () => [...outputs.keys()],
    flush
  }
}
