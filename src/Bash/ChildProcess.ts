/**
 * A thin scoped wrapper over `node:child_process` for one command and its process group.
 *
 * Why not `@effect/platform` `Command`: it reports a signal death only inside an error message,
 * closes with SIGTERM and no SIGKILL escalation, and waits for a `&` child holding the pipes.
 * Here the child is detached into its own process group (so the whole tree can be signalled with
 * `kill(-pgid)`), its stdin is `/dev/null` (a prompt fails fast instead of hanging), the exit is a
 * Deferred resolved on Node's `exit` event (which comes before `close` when a `&` job still holds
 * the pipes), and closing the scope always runs the bounded TERM → grace → KILL sequence.
 */
import * as cp from "node:child_process"
import * as fs from "node:fs"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { type ExitStatus, exited, signaled } from "./ExitStatus.js"

/** SIGTERM → this grace → SIGKILL. */
export const KILL_GRACE = Duration.seconds(2)

export class SpawnError extends Data.TaggedError("SpawnError")<{ readonly message: string }> {}

export interface SpawnOptions {
  readonly file: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  /**
   * Every chunk of stdout and stderr, in arrival order, as it comes. Called synchronously; `pipes`
   * lets a slow consumer stop the reading (the writer then blocks when the pipe fills).
   */
  readonly onData: (chunk: Buffer, pipes: Pipes) => void
}

export interface Pipes {
  readonly pause: () => void
  readonly resume: () => void
}

export interface Child {
  /** The pid, which is also the process group id. */
  readonly pid: number
  /** Completes when the main process has exited (its pipes may still be held open by `&` jobs). */
  readonly exit: Effect.Effect<ExitStatus>
  /** Completes when both pipes have closed. */
  readonly closed: Effect.Effect<void>
  readonly hasExited: () => boolean
  /** Stops / restarts reading the pipes (backpressure: the writer blocks when the pipe fills). */
  readonly pause: () => void
  readonly resume: () => void
  /** Sends a signal to the whole group; a group that is already gone is not an error. */
  readonly signalGroup: (signal: NodeJS.Signals) => void
  /** TERM to the group, up to the grace for the main process to exit, then KILL to the group. Returns the exit. */
  readonly terminate: Effect.Effect<ExitStatus>
  /** Stops reading and closes the pipes (what is left after a kill is not waited for). */
  readonly destroyPipes: () => void
}

/** Signals a process group, ignoring ESRCH (already gone). */
export const killGroup = (pgid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: nothing left in the group; EPERM cannot happen for our own children.
  }
}

/**
 * How many live (non-zombie) processes are in the group. Scans `/proc` on Linux; elsewhere answers
 * 1 when the group still exists (an honest lower bound) and 0 otherwise.
 */
export const countGroup = (pgid: number): number => {
  // Almost always the group is already gone: answer that without scanning /proc, which reads one
  // file per process on the machine (measured: 2-3 ms of every call with ~80 processes, more on a
  // desktop) and blocks the event loop meanwhile.
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return 0
  }
  let entries: Array<string>
  try {
    entries = fs.readdirSync("/proc")
  } catch {
    try {
      process.kill(-pgid, 0)
      return 1
    } catch {
      return 0
    }
  }
  let n = 0
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue
    let stat: string
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, "latin1")
    } catch {
      continue
    }
    // Fields after the command name (which may contain spaces and parentheses): state ppid pgrp …
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") n++
  }
  return n
}

const statusOf = (code: number | null, signal: NodeJS.Signals | null): ExitStatus =>
  signal !== null ? signaled(signal) : exited(code === null ? 255 : Math.max(0, Math.min(255, code)))

/**
 * Spawns a process in its own group. The scope's finalizer kills the group (TERM → grace → KILL
 * when the main process is still running, then KILL for anything left) and never blocks longer than
 * the grace plus a second.
 */
export const spawn = (options: SpawnOptions): Effect.Effect<Child, SpawnError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const exitDeferred = yield* Deferred.make<ExitStatus>()
      const closedDeferred = yield* Deferred.make<void>()
      const spawnError = yield* Deferred.make<string>()
      let child: cp.ChildProcess
      try {
        child = cp.spawn(options.file, options.args as Array<string>, {
          cwd: options.cwd,
          env: options.env,
          stdio: ["ignore", "pipe", "pipe"],
          detached: true
        })
      } catch (e) {
        return yield* new SpawnError({ message: e instanceof Error ? e.message : String(e) })
      }
      let exitedFlag = false
      child.on("error", (e) => {
        Deferred.unsafeDone(spawnError, Effect.succeed(e.message))
      })
      child.on("exit", (code, signal) => {
        exitedFlag = true
        Deferred.unsafeDone(exitDeferred, Effect.succeed(statusOf(code, signal)))
      })
      child.on("close", () => {
        Deferred.unsafeDone(closedDeferred, Effect.void)
      })
      if (child.pid === undefined) {
        const message = yield* Effect.interruptible(Deferred.await(spawnError)).pipe(
          Effect.timeoutTo({ duration: Duration.seconds(1), onSuccess: (m) => m, onTimeout: () => "unknown error" })
        )
        return yield* new SpawnError({ message: `could not start ${options.file}: ${message}` })
      }
      const pid = child.pid
      const pipes: Pipes = {
        pause: () => {
          child.stdout!.pause()
          child.stderr!.pause()
        },
        resume: () => {
          child.stdout!.resume()
          child.stderr!.resume()
        }
      }
      const onData = (chunk: Buffer) => options.onData(chunk, pipes)
      child.stdout!.on("data", onData)
      child.stderr!.on("data", onData)
      const signalGroup = (signal: NodeJS.Signals) => killGroup(pid, signal)
      const exit = Deferred.await(exitDeferred)
      // Finalizers run uninterruptibly, and a timeout waits for an uninterruptible effect to finish:
      // the bounded waits below must be explicitly interruptible or they would wait forever.
      const exitWithin = <A>(duration: Duration.Duration, onTimeout: () => A) =>
        Effect.interruptible(exit).pipe(Effect.timeoutTo({ duration, onSuccess: (s): ExitStatus | A => s, onTimeout }))
      const terminate: Effect.Effect<ExitStatus> = Effect.suspend(() => {
        if (exitedFlag) return exit
        signalGroup("SIGTERM")
        return exitWithin(KILL_GRACE, () => undefined).pipe(
          Effect.flatMap((status) =>
            status !== undefined ? Effect.succeed(status) : Effect.sync(() => signalGroup("SIGKILL")).pipe(
              // SIGKILL cannot be ignored; the bound only guards against a process stuck in the kernel.
              Effect.zipRight(exitWithin(Duration.seconds(1), () => statusOf(null, "SIGKILL")))
            )
          )
        )
      })
      const result: Child = {
        pid,
        exit,
        closed: Deferred.await(closedDeferred),
        hasExited: () => exitedFlag,
        pause: pipes.pause,
        resume: pipes.resume,
        signalGroup,
        terminate,
        destroyPipes: () => {
          child.stdout!.destroy()
          child.stderr!.destroy()
        }
      }
      return result
    }),
    (child) =>
      child.terminate.pipe(
        Effect.zipRight(Effect.sync(() => {
          child.signalGroup("SIGKILL")
          child.destroyPipes()
        }))
      )
  )
