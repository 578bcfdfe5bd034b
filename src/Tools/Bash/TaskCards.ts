/**
 * The cards of bash calls: the card events of one executor call, and the cards of background
 * tasks, which outlive the turn that started them and so go through the session's `background`
 * stream. Shared by every harness that runs bash.
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { BackgroundTask, BashSession, RunEvent } from "../../Bash/Bash.js"
import { CardEvent, toolOutputOf } from "../../Presentation/CardEvent.js"
import * as Intent from "../../Presentation/Intent.js"
import type { BashArgs } from "./BashArgs.js"
import * as BashTool from "./BashTool.js"


/** Card events of a session's tasks buffered ahead of the bridge (each at most one pipe read). */
const EVENTS_CAPACITY = 32

/**
 * One executor call as the events of its card: started, output, completed (a failure still closes
 * it). `cancel` stops this call alone (see `CardEvent.ToolCallStarted`).
 */
export const cardEvents = (
  callId: string,
  args: BashArgs,
  cwd: string,
  call: Intent.CallIntent,
  events: Stream.Stream<RunEvent, { readonly message: string }>,
  options: {
    /** The files the call changed, shown after its end. */
    readonly changedFiles?: Effect.Effect<Intent.ChangedFiles>
    readonly cancel?: Effect.Effect<void>
  } = {}
): Stream.Stream<CardEvent> =>
  Stream.make(CardEvent.ToolCallStarted({
    callId,
    presentation: call,
    pending: false,
    ...(options.cancel === undefined ? {} : { cancel: options.cancel })
  })).pipe(
    Stream.concat(events.pipe(
      Stream.map((event) =>
        event._tag === "Output"
          ? toolOutputOf(callId, event)
          : CardEvent.ToolCallCompleted({ callId, presentation: BashTool.presentResult(args, event.result.text, { cwd }) })
      ),
      Stream.catchAll((error) =>
        Stream.make(CardEvent.ToolCallCompleted({ callId, presentation: Intent.failure(error.message) }))
      )
    )),
    // After the end, never before it: the card's exit is not delayed by the comparison.
    Stream.concat(Stream.fromEffect(options.changedFiles ?? Effect.succeed(Intent.NO_CHANGES)).pipe(
      Stream.filter((changed) => !Intent.isEmpty(changed)),
      Stream.map((changed) => CardEvent.ToolCallFilesChanged({ callId, changed }))
    ))
  )

export interface TaskCards {
  /** The cards' events, for `HarnessSession.background`; ends when the scope closes. */
  readonly events: Stream.Stream<CardEvent>
  /**
   * Opens the card of a started task under `callId`; it closes with the task's own exit, then
   * shows `changedFiles` (the files changed since the task started).
   */
  readonly open: (callId: string, args: BashArgs, task: BackgroundTask, changedFiles?: Effect.Effect<Intent.ChangedFiles>) => Effect.Effect<void>
}

/**
 * Task cards of one session. Make it after the session's `BashSession`: closing the scope then
 * first kills the tasks still running (so their cards get their exit), waits for their last
 * events, ends the stream, and only then lets the Bash session go.
 */
export const make = (shell: BashSession): Effect.Effect<TaskCards, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Bounded: a task whose card is not read (a stalled client) waits here, which pauses its
    // executor stream and then its pipe, instead of piling its output up in the heap.
    const events = yield* Mailbox.make<CardEvent>({ capacity: EVENTS_CAPACITY })
    const forwarders = yield* Ref.make<ReadonlyArray<Fiber.RuntimeFiber<void>>>([])
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        // All at once: each kill may take the whole TERM grace.
        const running = (yield* shell.list).filter((task) => task.result === undefined)
        yield* Effect.forEach(running, (task) => Effect.ignore(shell.kill(task.id)), { concurrency: "unbounded", discard: true })
        const fibers = yield* Ref.get(forwarders)
        yield* Fiber.awaitAll(fibers).pipe(Effect.timeout("5 seconds"), Effect.ignore)
        // A forwarder still blocked on the full mailbox has no reader any more: it must not hang.
        yield* Fiber.interruptAll(fibers)
        yield* events.end
      })
    )
    const open: TaskCards["open"] = (callId, args, task, changedFiles) =>
      Effect.gen(function*() {
        const call = BashTool.presentTaskCall(args, task.info.id, { cwd: task.info.cwd })
        // The task's own Stop: the kill sequence through the task's lifecycle, so its card still
        // closes with the task's real exit. Forked: a cancel answers at once, the exit follows.
        const stop = Effect.asVoid(Effect.forkDaemon(Effect.ignore(shell.kill(task.info.id))))
        const fiber = yield* cardEvents(callId, args, task.info.cwd, call, task.events, { cancel: stop, ...(changedFiles === undefined ? {} : { changedFiles }) }).pipe(
          Stream.runForEach((event) => events.offer(event)),
          Effect.forkDaemon
        )
        // Forget forwarders that are done, so a long session does not keep every task's fiber.
        const alive = yield* Effect.filter(yield* Ref.get(forwarders), (f) => Effect.map(f.poll, Option.isNone))
        yield* Ref.set(forwarders, [...alive, fiber])
      })
    return { events: Mailbox.toStream(events), open }
  })
