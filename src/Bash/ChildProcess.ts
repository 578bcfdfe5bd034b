/**
 * A thin scoped wrapper over `node:child_process` for one command and its process group.
 *
 * Why not `@effect/platform` `Command`: it reports a signal death only inside an error message,
 * closes with SIGTERM and no SIGKILL escalation, and waits for a `&` child holding the pipes.
 * Here the child is detached into its own process group (so the whole tree can be signalled with
 * `kill(-pgid)`), its stdin is `/dev/null` (a prompt fails fast instead of hanging), the exit is a
 * Deferred resolved on Node's `exit` event (which comes before `close` when a `&` job still holds
 * the pipes), and closing the scope always runs the bounded TERM → grace → KILL sequence.
 *
 * Containment. A process group cannot hold a `setsid` grandchild, and nothing kills the group when
 * the agent itself is SIGKILLed. When `bwrap` works, the command runs in its own pid namespace
 * (see {@link PidNamespace}): when the namespace's init dies the kernel kills every process in it,
 * and `--die-with-parent` ties that init to the agent's life.
 */
import * as cp from "node:child_process"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { type ExitStatus, exited, signaled } from "../Terminal/ExitStatus.js"
import { bwrapArgs, FULL_VIEW } from "./NamespaceInit.js"
import { NamespaceWatch } from "./NamespaceWatch.js"
import { disposePrewarmed, goPipe, killGroup, type Prewarmed, prewarmedFits } from "./Prewarm.js"
import { countGroup, countNamespace } from "./ProcScan.js"

// The parts, under the names the rest of the executor (and its tests) know them by.
export { BWRAP_FLAGS, bwrapArgs, FULL_VIEW, NAMESPACE_FLAGS, namespaceStatus } from "./NamespaceInit.js"
export { disposePrewarmed, killGroup, prewarm, type Prewarmed, PREWARMED_MAX_SCRIPT } from "./Prewarm.js"
export { countGroup, countNamespace } from "./ProcScan.js"
export { probeBwrap, type ProbeResult } from "./BwrapProbe.js"

/** SIGTERM → this grace → SIGKILL. */
export const KILL_GRACE = Duration.seconds(2)

export class SpawnError extends Data.TaggedError("SpawnError")<{ readonly message: string }> {}

/**
 * How a command's processes are held together.
 * - `ProcessGroup`: the command is the leader of its own group; `kill(-pgid)` reaches the tree,
 *   except a `setsid` grandchild, and an agent killed by SIGKILL leaves the group running.
 * - `PidNamespace`: as above, inside a pid namespace made by `bwrap`; the namespace's death takes
 *   everything in it, escapees included, and it dies with the agent.
 */
export type Containment =
  | { readonly _tag: "ProcessGroup" }
  | {
    readonly _tag: "PidNamespace"
    readonly bwrap: string
    /** What the namespace sees of the filesystem and network (a sandbox profile, `Sandbox.ts`); default {@link FULL_VIEW}. */
    readonly view?: ReadonlyArray<string>
  }

export const processGroup: Containment = { _tag: "ProcessGroup" }

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
  /** Default {@link processGroup}. */
  readonly containment?: Containment
  /**
   * In a pid namespace: a file where the command records `$?` from its EXIT trap (a bash script
   * `trap 'echo $? > file' EXIT; …`), to tell `exit 143` from a SIGTERM death (see {@link namespaceStatus}).
   */
  readonly exitFile?: string
  /**
   * A process (and namespace) started ahead for this call (see {@link prewarm}); used when it is
   * alive and was started for the same containment, program, arguments (all but the last) and
   * environment (bar `PWD`), else ended and a fresh one spawned. Taken inside the uninterruptible acquisition, so that from then
   * on the spawn owns it: no interruption can leave it without an owner.
   */
  readonly prewarmed?: () => Prewarmed | undefined
}

export interface Pipes {
  readonly pause: () => void
  readonly resume: () => void
}

export interface Child {
  /** The pid of the spawned process (bash, or the outer `bwrap`). */
  readonly pid: number
  /** Completes when the main process has exited (its pipes may still be held open by `&` jobs). */
  readonly exit: Effect.Effect<ExitStatus>
  /** Completes when both pipes have closed. */
  readonly closed: Effect.Effect<void>
  /** `closed` has completed: waiting for it would only cost a timer and a fiber. */
  readonly hasClosed: () => boolean
  /** Stops / restarts reading the pipes (backpressure: the writer blocks when the pipe fills). */
  readonly pause: () => void
  readonly resume: () => void
  /** Sends a signal to the whole group; a group that is already gone is not an error. */
  readonly signalGroup: (signal: NodeJS.Signals) => void
  /** TERM to the group, up to the grace for the main process to exit, then KILL to the group. Returns the exit. */
  readonly terminate: Effect.Effect<ExitStatus>
  /** Stops reading and closes the pipes (what is left after a kill is not waited for). */
  readonly destroyPipes: () => void
  /** Live processes still belonging to the command (the group; in a namespace, all of it but init). */
  readonly countLive: () => number
  /** Waits (at most a second) for the spawned process itself to be gone, once killed. */
  readonly reaped: Effect.Effect<void>
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
      const inNamespace = options.containment?._tag === "PidNamespace" ? options.containment : undefined
      let child: cp.ChildProcess
      const prewarmed = options.prewarmed?.()
      const usePrewarmed = prewarmed !== undefined && prewarmedFits(prewarmed, options.containment ?? processGroup, options)
      if (prewarmed !== undefined && !usePrewarmed) yield* Effect.forkDaemon(disposePrewarmed(prewarmed))
      try {
        child = usePrewarmed
          ? prewarmed.child
          : inNamespace === undefined
          ? cp.spawn(options.file, options.args as Array<string>, {
            cwd: options.cwd,
            env: options.env,
            stdio: ["ignore", "pipe", "pipe"],
            detached: true
          })
          : cp.spawn(inNamespace.bwrap, bwrapArgs(options.cwd, options.file, options.args, inNamespace.view), {
            cwd: options.cwd,
            env: options.env,
            // 3: bwrap's info (init's host pid and the namespace), 4: init's report of the exit status.
            stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"],
            detached: true
          })
      } catch (e) {
        return yield* new SpawnError({ message: e instanceof Error ? e.message : String(e) })
      }
      let exitedFlag = false
      const setExit = (status: ExitStatus) => {
        exitedFlag = true
        Deferred.unsafeDone(exitDeferred, Effect.succeed(status))
      }
      child.on("error", (e) => {
        Deferred.unsafeDone(spawnError, Effect.succeed(e.message))
      })
      // In a namespace, bwrap itself exits only when init is killed (or when it fails to set up);
      // the command's exit comes first on fd 4.
      const reaped = yield* Deferred.make<void>()
      child.on("exit", () => Deferred.unsafeDone(reaped, Effect.void))
      if (inNamespace === undefined) child.on("exit", (code, signal) => setExit(statusOf(code, signal)))
      // Both output pipes closed (not Node's `close`, which also waits for the namespace's fds 3 and 4).
      let openPipes = 2
      const hasClosed = () => openPipes === 0
      const pipeClosed = () => {
        if (--openPipes === 0) Deferred.unsafeDone(closedDeferred, Effect.void)
      }
      child.stdout!.on("close", pipeClosed)
      child.stderr!.on("close", pipeClosed)
      if (child.pid === undefined) {
        const message = yield* Effect.interruptible(Deferred.await(spawnError)).pipe(
          Effect.timeoutTo({ duration: Duration.seconds(1), onSuccess: (m) => m, onTimeout: () => "unknown error" })
        )
        return yield* new SpawnError({ message: `could not start ${inNamespace?.bwrap ?? options.file}: ${message}` })
      }
      const pid = child.pid
      if (usePrewarmed) {
        // The go signal: cwd, then the script with one final newline (see PREWARMED_INIT).
        const go = goPipe(child)
        go.end(`${options.cwd}\n${options.args[options.args.length - 1]}\n`)
      }
      const watch = inNamespace === undefined ? undefined : new NamespaceWatch(child, {
        info: usePrewarmed ? prewarmed.info : undefined,
        exitFile: options.exitFile,
        statusOf,
        onStatus: (status) => {
          if (!exitedFlag) setExit(status)
        }
      })
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
      // Once a group is seen empty it is never signalled again: each `kill` of a gone group throws
      // (an exception with a stack trace, several per call), and its number could be reused.
      let groupGone = false
      const signalOwnGroup = (signal: NodeJS.Signals) => {
        if (!groupGone) killGroup(pid, signal)
      }
      const signalGroup = (signal: NodeJS.Signals) => {
        if (watch === undefined) return signalOwnGroup(signal)
        watch.signalled()
        const namespace = watch.namespace
        // Before bwrap told us init's pid, only bwrap's own group can be reached: any signal that
        // ends bwrap ends the namespace too (--die-with-parent), just without a grace.
        if (namespace !== undefined) killGroup(namespace.init, signal)
        if (namespace === undefined || signal === "SIGKILL") signalOwnGroup(signal)
      }
      const countOwnGroup = () => {
        const n = countGroup(pid)
        if (n === 0) groupGone = true
        return n
      }
      const countLive = () =>
        watch === undefined
          ? countOwnGroup()
          : watch.ended
          ? 0
          : watch.namespace === undefined
          ? countOwnGroup()
          : countNamespace(watch.namespace.inode, watch.namespace.init)
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
      // The outer bwrap holds the output pipes until the namespace ends, so they cannot signal that
      // the command's processes are done: in a namespace, "closed" is "nothing but init is left"
      // (polled: cheap, and immediate for the usual command that leaves nothing behind); then init
      // is killed, bwrap exits and the pipes really close.
      const namespaceClosed: Effect.Effect<void> = Effect.gen(function*() {
        yield* exit
        // Init found itself alone and exits: the pipes close by themselves.
        if (watch?.ended === true) return yield* Deferred.await(closedDeferred)
        let delay = 2
        while (countLive() > 0) {
          yield* Effect.sleep(Duration.millis(delay))
          delay = Math.min(delay * 2, 25)
        }
        signalGroup("SIGKILL")
        yield* Deferred.await(closedDeferred)
      })
      const waitReaped = Effect.interruptible(Deferred.await(reaped)).pipe(Effect.timeout(Duration.seconds(5)), Effect.ignore)
      // A namespace killed while its command ran dies asynchronously (init's death, or bwrap's
      // through --die-with-parent before we knew init): bwrap can be gone while a process forked
      // during the kill is still exiting. Bounded poll until the kernel has reaped them all.
      const waitNamespaceEmpty: Effect.Effect<void> = Effect.gen(function*() {
        if (watch?.killedLive !== true) return
        let delay = 1
        for (let waited = 0; waited < 3000; waited += delay) {
          const namespace = watch.namespace
          if (namespace !== undefined && countNamespace(namespace.inode, -1) === 0) return
          if (namespace === undefined && waited >= 500) return yield* Effect.logWarning("namespace unknown at kill: not checked")
          yield* Effect.sleep(Duration.millis(delay))
          delay = Math.min(delay * 2, 25)
        }
        yield* Effect.logWarning("processes of a killed namespace still alive after 3 s")
      })
      const result: Child = {
        pid,
        exit,
        closed: inNamespace === undefined ? Deferred.await(closedDeferred) : namespaceClosed,
        hasClosed,
        pause: pipes.pause,
        resume: pipes.resume,
        signalGroup,
        terminate,
        destroyPipes: () => {
          child.stdout!.destroy()
          child.stderr!.destroy()
          for (const extra of child.stdio.slice(3)) (extra as { destroy?: () => void } | null)?.destroy?.()
        },
        countLive,
        // The outer bwrap outlives the namespace by a moment: the scope waits for it, so that when
        // it closes the kernel has reaped every process of the namespace. Bounded, but generously:
        // on a loaded machine tearing a namespace down took over a second. Even when init found
        // itself alone: a child forked while the command was being killed can still be dying then
        // (seen: a test found it running right after the scope closed). The result was delivered
        // before this wait, so it costs the card nothing.
        reaped: inNamespace === undefined ? Effect.void : Effect.zipRight(waitReaped, waitNamespaceEmpty)
      }
      return result
    }),
    (child) =>
      child.terminate.pipe(
        Effect.zipRight(Effect.sync(() => {
          child.signalGroup("SIGKILL")
          child.destroyPipes()
        })),
        Effect.zipRight(child.reaped)
      )
  )
