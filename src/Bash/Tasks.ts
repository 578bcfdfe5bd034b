/**
 * A session's background tasks: started, listed, read (a cursor per task), killed, and all killed
 * when the session closes. Their fibers live in a `FiberMap` by task id (a fiber leaves it when it
 * ends, and closing the session's scope interrupts whatever is left); the registry keeps the live
 * tasks and the last {@link FINISHED_KEPT} finished ones, so a long session does not accumulate them.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import {
  type BackgroundTask,
  BashError,
  type BashConfig,
  type BashResult,
  type RunEvent,
  type RunRequest,
  type TaskInfo,
  type TaskOutput
} from "./Bash.js"
import type * as ChildProcess from "./ChildProcess.js"
import { execute, internalError, timeouts } from "./Execute.js"
import { ModelText } from "./ModelText.js"
import { decodeUtf8 } from "./OutputEvents.js"
import * as StatusLines from "./StatusLines.js"

/** A background start waits this long, so an instant failure is reported inline. */
const START_WAIT = Duration.seconds(1)
/** Upper bound on waiting for a stopped task to report its end. */
const STOP_LIMIT = Duration.seconds(10)
/** Characters a task's `events` buffers for a consumer that is late or absent; beyond, chunks are skipped (and said so). */
const EVENTS_MAX_CHARS = 4 * 1024 * 1024
/** Finished tasks kept for `list` and `read`; older ones are forgotten. */
export const FINISHED_KEPT = 64

interface TaskState {
  readonly id: string
  readonly command: string
  readonly cwd: string
  readonly startedAt: number
  result: BashResult | undefined
  readonly stop: Deferred.Deferred<void>
  readonly done: Deferred.Deferred<BashResult>
  readonly window: ModelText
  readonly events: Queue.Queue<RunEvent>
}

const taskInfo = (t: TaskState): TaskInfo => ({
  id: t.id,
  command: t.command,
  cwd: t.cwd,
  startedAt: t.startedAt,
  ...(t.result !== undefined ? { result: t.result } : {})
})

/** What tasks take from their session. */
export interface TaskDeps {
  readonly config: BashConfig
  /** Where a task runs: the session cwd, or its `workdir` resolved against it. */
  readonly dirFor: (args: RunRequest) => Effect.Effect<string, BashError>
  /** How the next call runs (the session's current profile). */
  readonly containment: Effect.Effect<ChildProcess.Containment>
  readonly envFor: (containment: ChildProcess.Containment) => Record<string, string>
  readonly toolDir: string
  readonly envFile: string | undefined
}

export interface Tasks {
  readonly start: (args: RunRequest) => Effect.Effect<BackgroundTask, BashError>
  readonly list: Effect.Effect<ReadonlyArray<TaskInfo>>
  readonly read: (id: string) => Effect.Effect<TaskOutput, BashError>
  readonly kill: (id: string) => Effect.Effect<TaskInfo, BashError>
}

export const make = (deps: TaskDeps): Effect.Effect<Tasks, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { config } = deps
    const tasks = new Map<string, TaskState>()
    let taskCounter = 0
    /** Tasks between the limit check and their registration. */
    let starting = 0
    const fibers = yield* FiberMap.make<string>()
    /** Forgets the oldest finished tasks beyond {@link FINISHED_KEPT} (a Map iterates in insertion order). */
    const evictFinished = () => {
      let finished = 0
      for (const t of tasks.values()) if (t.result !== undefined) finished++
      for (const [id, t] of tasks) {
        if (finished <= FINISHED_KEPT) break
        if (t.result === undefined) continue
        tasks.delete(id)
        finished--
      }
    }

    /** The kill sequence through the task's own lifecycle, so its `events` still end with `Finished`. Bounded. */
    const stopTask = (t: TaskState): Effect.Effect<void> =>
      Deferred.succeed(t.stop, undefined).pipe(
        // Grace + drain + final kill stay well under this; the margin only guards the guard.
        Effect.zipRight(Effect.interruptible(Deferred.await(t.done)).pipe(Effect.timeout(STOP_LIMIT), Effect.ignore))
      )

    // Closing the session kills every task at once (not one grace period after another).
    yield* Effect.addFinalizer(() =>
      Effect.forEach(
        [...tasks.values()],
        (t) =>
          stopTask(t).pipe(
            Effect.zipRight(FiberMap.remove(fibers, t.id)),
            // A task that did not finish in time has no `Finished`: end its events for any reader.
            Effect.zipRight(Effect.suspend(() => t.result === undefined ? Queue.shutdown(t.events) : Effect.void))
          ),
        { concurrency: "unbounded", discard: true }
      )
    )

    const start = (args: RunRequest): Effect.Effect<BackgroundTask, BashError> =>
      Effect.gen(function*() {
        // Checked and reserved in one synchronous step, so concurrent starts cannot pass the limit.
        const refused = yield* Effect.sync(() => {
          const live = [...tasks.values()].filter((t) => t.result === undefined).length + starting
          if (live >= config.maxTasks) return live
          starting++
          return undefined
        })
        if (refused !== undefined) {
          return yield* new BashError({
            reason: "TooManyTasks",
            message: `${refused} background tasks are running (at most ${config.maxTasks}); kill one first`
          })
        }
        const slot = { held: true }
        return yield* startReserved(args, slot).pipe(Effect.ensuring(Effect.sync(() => {
          if (slot.held) starting--
        })))
      })

    /** Starts a task whose slot is reserved; the slot passes to `tasks` once registered. */
    const startReserved = (args: RunRequest, slot: { held: boolean }): Effect.Effect<BackgroundTask, BashError> =>
      Effect.gen(function*() {
        const dir = yield* deps.dirFor(args)
        const id = `bg-${++taskCounter}`
        const containment = yield* deps.containment
        const events = yield* Queue.unbounded<RunEvent>()
        let queuedChars = 0
        let skippedChars = 0
        const flushSkipped = () => {
          if (skippedChars === 0) return
          const note = `\n[… ${skippedChars} chars of output skipped …]\n`
          skippedChars = 0
          queuedChars += note.length
          events.unsafeOffer({ _tag: "Output", data: note })
        }
        const offerEvent = (data: string, bytes: Uint8Array) => {
          if (queuedChars + data.length > EVENTS_MAX_CHARS) {
            skippedChars += data.length
            return
          }
          flushSkipped()
          queuedChars += data.length
          events.unsafeOffer({ _tag: "Output", data, bytes })
        }
        const state: TaskState = {
          id,
          command: args.command,
          cwd: dir,
          startedAt: Date.now(),
          result: undefined,
          stop: yield* Deferred.make<void>(),
          done: yield* Deferred.make<BashResult>(),
          window: new ModelText(config.maxOutputChars),
          events
        }
        // The task's process lives in its own scope, closed by the task's fiber when it ends or is
        // interrupted (task kill, session close). Spawn and fork are one uninterruptible step so no
        // process can be started without an owner.
        yield* Effect.uninterruptible(Effect.gen(function*() {
          const scope = yield* Scope.make()
          const wait = yield* execute(config, containment, {
            command: args.command,
            cwd: dir,
            ...timeouts(args.timeout_ms, undefined),
            recordCwd: false,
            stop: Deferred.await(state.stop),
            toolDir: deps.toolDir,
            env: deps.envFor(containment),
            envFile: deps.envFile,
            onOutput: (bytes) => {
              const data = decodeUtf8(bytes)
              state.window.push(data)
              offerEvent(data, bytes)
              return undefined
            }
          }).pipe(
            Scope.extend(scope),
            Effect.tapError(() => Scope.close(scope, Exit.void))
          )
          tasks.set(id, state)
          slot.held = false
          starting--
          // Forked from an uninterruptible region, the fiber would inherit it: make it interruptible.
          yield* Effect.interruptible(wait).pipe(
            // Should the wait die (a defect while rendering, say), the task still ends: its events
            // get a `Finished` saying so (not a valid result text: a UI shows it as failed) and a
            // stop does not wait for a `done` that would never come. Its scope kills what is left.
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause)
                : Effect.sync(() => {
                  const error = internalError(cause)
                  return { result: { _tag: "Failed", error, text: error.message, cwd: dir } satisfies BashResult }
                })
            ),
            Effect.flatMap((r) =>
              Effect.sync(() => {
                state.result = r.result
                flushSkipped()
                events.unsafeOffer({ _tag: "Finished", result: r.result })
                evictFinished()
              }).pipe(Effect.zipRight(Deferred.succeed(state.done, r.result)))
            ),
            Effect.asVoid,
            Effect.ensuring(Scope.close(scope, Exit.void)),
            (task) => FiberMap.run(fibers, id, task)
          )
        }))
        const early = yield* Effect.interruptible(Deferred.await(state.done)).pipe(Effect.timeout(START_WAIT), Effect.option)
        const window = state.window.take()
        const startedParts: StatusLines.ResultParts = {
          output: StatusLines.toOutputText(window.text),
          ...(window.omittedChars > 0 ? { truncated: { omittedChars: window.omittedChars } } : {}),
          end: StatusLines.BackgroundStarted.make({ taskId: id })
        }
        const started: BashResult = Option.isSome(early)
          ? early.value
          : { _tag: "Completed", parts: startedParts, text: StatusLines.render(startedParts), cwd: dir }
        return {
          info: taskInfo(state),
          started,
          events: Stream.fromQueue(events).pipe(
            Stream.tap((e) => Effect.sync(() => {
              if (e._tag === "Output") queuedChars -= e.data.length
            })),
            Stream.takeUntil((e) => e._tag === "Finished")
          )
        }
      })

    const find = (id: string): Effect.Effect<TaskState, BashError> =>
      Effect.suspend(() => {
        const t = tasks.get(id)
        return t === undefined
          ? Effect.fail(new BashError({ reason: "TaskNotFound", message: `no background task ${id}` }))
          : Effect.succeed(t)
      })

    return {
      start,
      list: Effect.sync(() => [...tasks.values()].map(taskInfo)),
      read: (id) =>
        Effect.map(find(id), (t): TaskOutput => {
          // The window's text marks omitted output in the middle when it exceeded the budget.
          const { text } = t.window.take()
          return { info: taskInfo(t), output: text, running: t.result === undefined }
        }),
      kill: (id) => find(id).pipe(Effect.tap(stopTask), Effect.map(taskInfo))
    }
  })
