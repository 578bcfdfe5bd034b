/**
 * One tool call of a model turn, once the model's arguments have decoded: its card, the user's
 * permission when the session's mode (or `--approve-all`) says to ask, the tool's own run with live
 * output, the result card and the changed files. Whatever the tool does (throws, dies, is refused or
 * cancelled), its card closes and the model gets a result: a call left without one in the history
 * makes every later request fail.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Intent from "../Presentation/Intent.js"
import type { Tool, ToolOutcome } from "../Tools/Tool.js"
import type { SessionContext } from "./Harness.js"
import { HarnessEvent } from "./HarnessEvent.js"
import { describeUnknown, type Outcome } from "./ModelResponse.js"
import type * as Modes from "./Modes.js"

/** Where a turn's events go. */
export interface Emit {
  (event: HarnessEvent): Effect.Effect<void>
  /** Emits `event` and waits until the consumer of the turn's stream has taken it and asked for the next one. */
  readonly delivered: (event: HarnessEvent) => Effect.Effect<void>
}

/** What a call needs of its session. */
export interface CallSession {
  readonly client: SessionContext["client"]
  /** The session's cwd at the moment the call starts. */
  readonly cwd: Effect.Effect<string>
  /** The session's modes, when its tools are sandboxed (a sandboxed tool asks as the mode says). */
  readonly modes: Modes.Modes | undefined
  /** `--approve-all`: no tool asks. */
  readonly approveAll: boolean
  /** The user answered "always allow" once in this session. */
  readonly alwaysAllow: Ref.Ref<boolean>
}

export const NOT_RUN_CANCELLED: Outcome = { result: "The user cancelled the turn before this call ran: it did not run.", isFailure: true }
const REJECTED: Outcome = {
  result: "The user rejected this command: it did not run. Do not retry it unchanged; ask the user or take another approach.",
  isFailure: true
}

/** Runs `tool` on its decoded `args` as the card `callId`; `cancel` is the turn's. */
export const run = (
  session: CallSession,
  callId: string,
  tool: Tool,
  args: unknown,
  cancel: Deferred.Deferred<void>,
  emit: Emit
): Effect.Effect<Outcome> =>
  Effect.gen(function*() {
    const cwd = yield* session.cwd
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
    const modeAsks = tool.sandboxed === true && session.modes !== undefined ? yield* session.modes.asks : !session.approveAll
    const ask = modeAsks && (tool.requiresPermission?.(args) ?? true) && !(yield* Ref.get(session.alwaysAllow))
    // This call's own Stop (a client's per-call cancel): raced with the turn's cancel below, it
    // stops the call alone; the model gets the call's result and the turn goes on.
    const stop = yield* Deferred.make<void>()
    const stopCall = Deferred.complete(stop, Effect.void).pipe(Effect.asVoid)
    // The card must be on the wire before the permission request that names it.
    yield* (ask ? emit.delivered : emit)(HarnessEvent.ToolCallStarted({ callId, presentation, pending: ask, cancel: stopCall }))
    if (ask) {
      // A client should answer `cancelled` after `session/cancel`; one that does not must not
      // hold the turn.
      const decision = yield* session.client.requestPermission({ callId, presentation }).pipe(
        Effect.raceFirst(Effect.as(Effect.raceFirst(Deferred.await(cancel), Deferred.await(stop)), "cancelled" as const))
      )
      if (decision === "reject" || decision === "cancelled") {
        const note = decision === "reject" ? "Rejected: the command did not run." : "Cancelled: the command did not run."
        yield* emit(HarnessEvent.ToolCallCompleted({ callId, presentation: Intent.failure(note, Intent.callContent(presentation)) }))
        return decision === "reject" ? REJECTED : NOT_RUN_CANCELLED
      }
      if (decision === "allow_always") yield* Ref.set(session.alwaysAllow, true)
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
