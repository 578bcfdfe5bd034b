/**
 * One ACP session on the agent side: the harness session it drives, the mapper that turns the
 * harness's events into `session/update`s, and the turn in flight (at most one; a second prompt
 * waits for the first to end).
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ClientAccess, Harness, PromptBlock, SessionModes, SlashCommand } from "../Harness/Harness.js"
import type { HarnessEvent, StopReason } from "../Harness/HarnessEvent.js"
import type { Mapping } from "./Mapping.js"
import type { SessionNotification } from "./SessionUpdate.js"

/**
 * How long a cancelled harness may take to report its final events before the bridge closes its
 * cards itself: longer than the executor's worst kill path (TERM, 2 s grace, KILL, 2 s drain), so
 * a well-behaved harness always reports the real end.
 */
export const CANCEL_GRACE: Duration.DurationInput = "10 seconds"

export interface Session {
  readonly id: string
  readonly cwd: string
  readonly commands: ReadonlyArray<SlashCommand>
  /** The harness session's modes, if it has any. */
  readonly modes: SessionModes | undefined
  /**
   * Runs one prompt turn to its stop reason. Concurrent prompts of one session queue. `arrival`
   * orders the prompt against `cancelFrom` (the peer's `seq`); without it only `cancel` reaches it.
   */
  readonly prompt: (blocks: ReadonlyArray<PromptBlock>, arrival?: number) => Effect.Effect<StopReason>
  /** Cancels the turn in flight, if any. */
  readonly cancel: Effect.Effect<void>
  /**
   * `session/cancel` read at `arrival`: cancels the turn in flight and every prompt that arrived
   * before it, even one whose handler has not reached the session yet or that waits for the turn.
   */
  readonly cancelFrom: (arrival: number) => Effect.Effect<void>
  /** Cancels the turn, ends everything the session owns (its cards get their final update), frees it. */
  readonly close: Effect.Effect<void>
}

export const open = (options: {
  readonly id: string
  readonly cwd: string
  readonly additionalDirectories?: ReadonlyArray<string>
  readonly harness: Harness["Type"]
  readonly mapping: Mapping["Type"]
  readonly emit: (params: SessionNotification) => Effect.Effect<void>
  readonly client: ClientAccess
}): Effect.Effect<Session> =>
  Effect.gen(function*() {
    // The mapper outlives the harness session: when the harness shuts down (killing its background
    // tasks), the mapper is still there to send those cards' final updates.
    const mapperScope = yield* Scope.make()
    const harnessScope = yield* Scope.make()
    const mapper = yield* options.mapping.forSession(options.id, options.emit).pipe(Scope.extend(mapperScope))
    const harness = yield* options.harness.openSession({
      sessionId: options.id,
      cwd: options.cwd,
      ...(options.additionalDirectories === undefined ? {} : { additionalDirectories: options.additionalDirectories }),
      client: options.client
    }).pipe(
      Scope.extend(harnessScope)
    )
    const backgroundFiber = yield* harness.background.pipe(
      Stream.runForEach((event) => mapper.consume(event)),
      Effect.catchAllCause((cause) => Effect.logError("background events failed", cause)),
      Effect.forkDaemon
    )
    const turnLock = yield* Effect.makeSemaphore(1)
    const currentCancel = yield* Ref.make(Option.none<Deferred.Deferred<void>>())
    const closed = yield* Ref.make(false)
    /** Arrival of the latest `session/cancel`: prompts that arrived before it are cancelled. */
    let cancelledBefore = 0

    const runTurn = (blocks: ReadonlyArray<PromptBlock>) =>
      Effect.gen(function*() {
        const cancel = yield* Deferred.make<void>()
        yield* Ref.set(currentCancel, Option.some(cancel))
        const stopReason = yield* Ref.make<StopReason>("end_turn")
        const started: Array<string> = []
        const consume = (event: HarnessEvent) => {
          if (event._tag === "TurnEnded") return Ref.set(stopReason, event.stopReason)
          if (event._tag === "ToolCallStarted") started.push(event.callId)
          return mapper.consume(event)
        }
        // Whatever ends the turn (its harness, a failure, or the request being interrupted by
        // `$/cancel_request` or shutdown), the cards it opened and did not close get their final
        // update: a client must never be left with a running card.
        const closeLeftovers = Effect.gen(function*() {
          const open = yield* mapper.openCalls
          const leftOpen = started.filter((id) => open.includes(id))
          // Task cards go through the background stream, so they are not in `started` and stay open.
          if (leftOpen.length > 0) yield* mapper.closeOpen({ signal: "SIGTERM", callIds: leftOpen })
          yield* mapper.flush
          yield* Ref.set(currentCancel, Option.none())
        })
        const turn = yield* harness.prompt(blocks, { cancel }).pipe(Stream.runForEach(consume), Effect.fork)
        // A harness that ignores the cancel is interrupted after a grace period.
        const exit = yield* Fiber.await(turn).pipe(
          Effect.raceFirst(
            Deferred.await(cancel).pipe(
              Effect.zipRight(Effect.sleep(CANCEL_GRACE)),
              Effect.zipRight(Fiber.interrupt(turn))
            )
          ),
          Effect.onInterrupt(() => Fiber.interrupt(turn).pipe(Effect.zipRight(closeLeftovers)))
        )
        if (Exit.isFailure(exit) && !Exit.isInterrupted(exit)) yield* Effect.logError("prompt turn failed", exit.cause)
        yield* closeLeftovers
        return (yield* Deferred.isDone(cancel)) ? "cancelled" as const : yield* Ref.get(stopReason)
      })

    const cancel = Ref.get(currentCancel).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: (d) => Deferred.succeed(d, undefined) })),
      Effect.asVoid
    )

    const close = Effect.gen(function*() {
      if (yield* Ref.getAndSet(closed, true)) return
      yield* cancel
      // Wait for the turn to finish its final updates before tearing the harness down.
      yield* turnLock.withPermits(1)(Effect.void).pipe(Effect.timeout(Duration.sum(CANCEL_GRACE, "1 second")), Effect.ignore)
      yield* Scope.close(harnessScope, Exit.void)
      yield* Fiber.join(backgroundFiber).pipe(Effect.timeout("5 seconds"), Effect.ignore)
      yield* Fiber.interrupt(backgroundFiber)
      yield* mapper.closeOpen({ signal: "SIGKILL" })
      yield* Scope.close(mapperScope, Exit.void)
    })

    return {
      id: options.id,
      cwd: options.cwd,
      commands: harness.commands,
      modes: harness.modes,
      prompt: (blocks, arrival) =>
        turnLock.withPermits(1)(Effect.flatMap(Ref.get(closed), (isClosed) =>
          // Cancelled before its turn began (queued, or not yet here when the cancel was read), or
          // queued behind a turn when the session closed: it never starts, so nothing of it reaches
          // the client.
          isClosed || (arrival !== undefined && arrival < cancelledBefore) ? Effect.succeed("cancelled" as const) : runTurn(blocks)
        )),
      cancel,
      cancelFrom: (arrival) =>
        Effect.suspend(() => {
          cancelledBefore = Math.max(cancelledBefore, arrival)
          return cancel
        }),
      close
    } satisfies Session
  })
