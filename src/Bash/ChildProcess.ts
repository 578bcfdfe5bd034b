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
import * as fs from "node:fs"
import * as os from "node:os"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { type ExitStatus, exited, signaled } from "../Terminal/ExitStatus.js"

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

/**
 * The namespace is made by `bwrap` and its pid 1 is our own tiny init (a POSIX sh), because:
 * - bwrap's own init reports a child's signal death as the exit code 128+n and exits as soon as the
 *   command does, killing `&` jobs before their output is drained; our init reports the status on
 *   fd 4 and then waits (as `sleep`, with every pipe closed) until we kill it, so the drain and
 *   the `&` job count work as in a process group;
 * - `--new-session` makes init (pid 1 inside) the leader of a new group whose id (its host pid) we
 *   read from `--info-fd`: signals go to that group, never to the outer `bwrap` process, whose death
 *   would SIGKILL the namespace at once and take away the command's TERM grace. Init itself ignores
 *   TERM (the kernel drops signals to a namespace's init that it has no handler for); SIGKILL to
 *   the group reaches it (forced from the parent namespace) and so ends the whole namespace;
 * - the command's stderr goes around init's own stderr, so the shell's "Terminated" notice for a
 *   signalled child is not printed into the output (see {@link NAMESPACE_INIT}).
 * `--dev-bind / /` keeps the whole filesystem (mounts below included, /dev too) as it is, `--proc
 * /proc` shows the namespace's own processes (so `ps`, `kill %1`, `$$` agree inside); the user,
 * environment and cwd are those of the agent (bwrap keeps the environment, `--chdir` the cwd).
 */
export const NAMESPACE_FLAGS: ReadonlyArray<string> = ["--unshare-pid", "--die-with-parent", "--new-session", "--as-pid-1"]

/** The whole filesystem as it is, and the host network: no sandbox, only the pid namespace. */
export const FULL_VIEW: ReadonlyArray<string> = ["--dev-bind", "/", "/", "--proc", "/proc"]

export const BWRAP_FLAGS: ReadonlyArray<string> = [...NAMESPACE_FLAGS, ...FULL_VIEW]

// After the command, init looks at the namespace's /proc (a glob: no fork). When it is the only
// process left (the usual case) it reports `<status> alone` and exits, which ends the namespace at
// once: no kill from the agent, no /proc scans on our side. Otherwise it reports `<status>` and
// waits, as described above.
//
// Init is a POSIX sh (dash where /bin/sh is dash: it starts ~0.6 ms faster than bash). The command
// runs as `(exec "$@" 2>&5 …)`: the subshell applies the redirection only in the forked child, so
// a shell that prints "Terminated" for a signalled child (dash does, to its fd 2 while a simple
// command's redirection is in place) prints it to init's /dev/null, never into the output.
/** After the command (whose status is `$?`): report it, and end or wait as described above. */
const INIT_AFTER_COMMAND = [
  `s=$?`,
  `set -- /proc/[0-9]*`,
  `if [ "$#" = 1 ]; then echo "$s alone" >&4; exit 0; fi`,
  `echo "$s" >&4`,
  `exec sleep 2147483647 </dev/null >/dev/null 2>&1 4>&- 5>&-`
]

const NAMESPACE_INIT = [
  `exec 5>&2 2>/dev/null`,
  `(exec "$@" 2>&5 5>&- 4>&-)`,
  ...INIT_AFTER_COMMAND
].join("; ")

/** The argv (after `bwrap`) that runs `file args` in a new pid namespace under our init. */
export const bwrapArgs = (
  cwd: string,
  file: string,
  args: ReadonlyArray<string>,
  view: ReadonlyArray<string> = FULL_VIEW
): Array<string> => [
  ...NAMESPACE_FLAGS,
  ...view,
  "--chdir",
  cwd,
  "--info-fd",
  "3",
  "--",
  "sh",
  "-c",
  NAMESPACE_INIT,
  "dsh-acp-init",
  file,
  ...args
]

// A pre-spawned namespace: the same init, except that it first waits on fd 6 for the call — one
// line with the cwd, then the last argument (the script), each of its lines read with `read -r`
// and joined back with newlines (the sender adds one final newline). `PWD` is the cwd, as a fresh
// spawn sets it. EOF before the cwd line (the
// session closed, or the agent is gone) ends init, and with it the namespace. dash's `read` takes a
// byte per system call: for a script of a few hundred bytes that is well under a millisecond.
const PREWARMED_INIT = [
  `exec 5>&2 2>/dev/null`,
  `IFS= read -r d <&6 || exit 0`,
  `c=; n=; while IFS= read -r l <&6; do c="$c$n$l"; n='\n'; done`,
  `exec 6<&-`,
  `cd -- "$d" 2>&5 || { echo "1 alone" >&4; exit 0; }`,
  `export PWD="$d"`,
  `(exec "$@" "$c" 2>&5 5>&- 4>&-)`,
  ...INIT_AFTER_COMMAND
].join("; ")

/**
 * The longest script (bytes) worth sending to a pre-spawned init: it reads ~1 µs per byte (measured:
 * 4 KB +2 ms, 64 KB +58 ms against a plain spawn), and a fresh namespace costs ~4 ms more than a
 * pre-spawned one, so beyond this a fresh spawn is as fast or faster.
 */
export const PREWARMED_MAX_SCRIPT = 2048

/**
 * A namespace started ahead of its command (bwrap's ~2 ms start-up happens while the agent is idle):
 * bwrap and its init, waiting on a pipe for the cwd and the script of `file args… script`. Each
 * command still gets a fresh namespace of its own; an unused one is ended by {@link disposePrewarmed}
 * (or by the agent's death: `--die-with-parent`, and EOF on the pipe).
 */
export interface Prewarmed {
  readonly bwrap: string
  readonly view: ReadonlyArray<string>
  readonly file: string
  /** The arguments before the script. */
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly child: cp.ChildProcess
  /** bwrap failed or was killed: it cannot be used. */
  dead: boolean
  /** What bwrap wrote on its info fd so far (read from the start, so it is known when the call comes). */
  info: string
}

/** Starts bwrap and its waiting init; never fails (a failure shows as `dead`, and the call spawns afresh). */
export const prewarm = (
  bwrap: string,
  file: string,
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>,
  view: ReadonlyArray<string> = FULL_VIEW
): Prewarmed | undefined => {
  let child: cp.ChildProcess
  try {
    child = cp.spawn(
      bwrap,
      [...NAMESPACE_FLAGS, ...view, "--chdir", "/", "--info-fd", "3", "--", "sh", "-c", PREWARMED_INIT, "dsh-acp-init", file, ...args],
      // 3: bwrap's info, 4: init's report, 6: the call (cwd and script) from us.
      { cwd: "/", env, stdio: ["ignore", "pipe", "pipe", "pipe", "pipe", "ignore", "pipe"], detached: true }
    )
  } catch {
    return undefined
  }
  const prewarmed: Prewarmed = { bwrap, view, file, args, env, child, dead: child.pid === undefined, info: "" }
  const info = child.stdio[3] as NodeJS.ReadableStream
  info.setEncoding("utf8")
  info.on("data", (text: string) => void (prewarmed.info += text))
  info.on("error", () => {})
  child.on("error", () => void (prewarmed.dead = true))
  child.on("exit", () => void (prewarmed.dead = true))
  ;goPipe(child).on("error", () => {})
  return prewarmed
}

/** Ends an unused pre-spawned namespace (EOF to init, SIGKILL to bwrap) and waits, bounded, for bwrap to be gone. */
export const disposePrewarmed = (p: Prewarmed): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const { child } = p
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    ;goPipe(child).end()
    killGroup(child.pid, "SIGKILL")
    for (const stream of child.stdio) (stream as { destroy?: () => void } | null)?.destroy?.()
  }).pipe(Effect.timeout(Duration.seconds(1)), Effect.ignore)

/** fd 6 of a pre-spawned namespace: the call goes there. */
const goPipe = (child: cp.ChildProcess): NodeJS.WritableStream => (child.stdio as ReadonlyArray<unknown>)[6] as NodeJS.WritableStream

const sameArgs = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i])

/** A spare started for another profile (the session's mode changed since) must never run the call. */
const prewarmedFits = (p: Prewarmed, bwrap: string, view: ReadonlyArray<string>, options: SpawnOptions): boolean => {
  if (p.dead || p.child.exitCode !== null || p.child.signalCode !== null || p.bwrap !== bwrap) return false
  if (!sameArgs(p.view, view)) return false
  if (p.file !== options.file || p.args.length !== options.args.length - 1 || options.cwd.includes("\n")) return false
  for (let i = 0; i < p.args.length; i++) if (p.args[i] !== options.args[i]) return false
  const { PWD: _pwd, ...env } = options.env
  const keys = Object.keys(env)
  if (keys.length !== Object.keys(p.env).length) return false
  for (const k of keys) if (p.env[k] !== env[k]) return false
  return true
}

/**
 * Signal numbers to names, as Node itself reports a signal death in process-group mode. Some numbers
 * have two names (Linux: 6 SIGABRT/SIGIOT, 29 SIGIO/SIGPOLL); `os.constants.signals` lists the name
 * Node uses first, so the first alias wins (a plain `new Map(entries)` would keep the last).
 */
const SIGNALS_BY_NUMBER: ReadonlyMap<number, NodeJS.Signals> = (() => {
  const byNumber = new Map<number, NodeJS.Signals>()
  for (const [name, n] of Object.entries(os.constants.signals)) {
    if (!byNumber.has(n)) byNumber.set(n, name as NodeJS.Signals)
  }
  return byNumber
})()

/**
 * The command's status from what init saw (`$?`, where a signal death n reads 128+n) and the
 * status the command's own EXIT trap recorded, if any. Bash runs that trap on a normal exit with
 * the exit status, and on a caught fatal signal (TERM, HUP, …) with the status of the command
 * before — rarely 128+n — while SIGKILL or an `exec`'d program skip it. So 128+n is a signal
 * unless the trap recorded exactly that code.
 */
export const namespaceStatus = (code: number, recorded: number | undefined): ExitStatus => {
  const signal = code > 128 ? SIGNALS_BY_NUMBER.get(code - 128) : undefined
  return signal !== undefined && recorded !== code ? signaled(signal) : exited(code)
}

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
   * A namespace started ahead for this call (see {@link prewarm}); used when it is alive and was
   * started for the same program, arguments (all but the last) and environment (bar `PWD`), else
   * ended and a fresh one spawned. Taken inside the uninterruptible acquisition, so that from then
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

/** Live processes in the pid namespace `nsInode` (Linux only), except `exceptPid`. */
export const countNamespace = (nsInode: number, exceptPid: number): number => {
  const target = `pid:[${nsInode}]`
  let n = 0
  let entries: Array<string>
  try {
    entries = fs.readdirSync("/proc")
  } catch {
    return 0
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57 || Number(entry) === exceptPid) continue
    try {
      if (fs.readlinkSync(`/proc/${entry}/ns/pid`) !== target) continue
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "latin1")
      const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
      if (state !== "Z" && state !== "X") n++
    } catch {
      // gone while we looked
    }
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
      const inNamespace = options.containment?._tag === "PidNamespace" ? options.containment : undefined
      let child: cp.ChildProcess
      const prewarmed = options.prewarmed?.()
      const usePrewarmed = prewarmed !== undefined && inNamespace !== undefined &&
        prewarmedFits(prewarmed, inNamespace.bwrap, inNamespace.view ?? FULL_VIEW, options)
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
      /** In a namespace: it is over (init said it was alone and exits, or bwrap exited): nothing is left in it. */
      let namespaceEnded = false
      /** In a namespace: a signal was sent while it was alive, so its teardown may still be running. */
      let killedLive = false
      child.on("exit", () => {
        namespaceEnded = true
        Deferred.unsafeDone(reaped, Effect.void)
      })
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
      /** In a namespace: init's host pid (the command's group) and the namespace, once bwrap said them. */
      let namespace: { readonly init: number; readonly inode: number } | undefined
      if (inNamespace !== undefined) {
        const info = child.stdio[3] as NodeJS.ReadableStream
        // A pre-spawned bwrap has said it already (mostly): known now, a kill reaches init at once.
        let infoText = usePrewarmed ? prewarmed.info : ""
        if (usePrewarmed) info.removeAllListeners("data")
        const parseInfo = () => {
          try {
            const parsed = JSON.parse(infoText) as { "child-pid"?: unknown; "pid-namespace"?: unknown }
            if (typeof parsed["child-pid"] === "number" && typeof parsed["pid-namespace"] === "number") {
              namespace = { init: parsed["child-pid"], inode: parsed["pid-namespace"] }
            }
          } catch {
            // not complete yet
          }
        }
        if (usePrewarmed) parseInfo()
        if (!usePrewarmed) info.setEncoding("utf8")
        info.on("data", (text: string) => {
          infoText += text
          parseInfo()
        })
        info.on("error", () => {})
        const report = child.stdio[4] as NodeJS.ReadableStream
        let reportText = ""
        // Without a report (init killed, or bwrap failed to set up) bwrap's own exit is the status:
        // it passes on init's death by signal n as 128+n (init is only ever killed by us). Taken
        // once both bwrap has exited and the report pipe has closed, so a report that is still in
        // the pipe when bwrap's exit is seen (init exits right after reporting) comes first.
        let bwrapExit: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined
        let reportClosed = false
        const exitWithoutReport = () => {
          if (exitedFlag || bwrapExit === undefined || !reportClosed) return
          const { code, signal } = bwrapExit
          setExit(signal === null && code !== null ? namespaceStatus(code, undefined) : statusOf(code, signal))
        }
        child.on("exit", (code, signal) => {
          bwrapExit = { code, signal }
          exitWithoutReport()
        })
        report.on("close", () => {
          reportClosed = true
          exitWithoutReport()
        })
        report.setEncoding("utf8")
        report.on("data", (text: string) => {
          reportText += text
          const m = /^(\d+)( alone)?\n/.exec(reportText)
          if (m === null || exitedFlag) return
          if (m[2] !== undefined) namespaceEnded = true
          let recorded: number | undefined
          if (options.exitFile !== undefined) {
            try {
              const text = fs.readFileSync(options.exitFile, "utf8").trim()
              if (/^\d+$/.test(text)) recorded = Number(text)
            } catch {
              // no EXIT trap ran: killed, or replaced by `exec`
            }
          }
          setExit(namespaceStatus(Number(m[1]), recorded))
        })
        report.on("error", () => {})
      }
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
      const signalGroup = (signal: NodeJS.Signals) => {
        if (inNamespace === undefined) return killGroup(pid, signal)
        if (!namespaceEnded) killedLive = true
        // Before bwrap told us init's pid, only bwrap's own group can be reached: any signal that
        // ends bwrap ends the namespace too (--die-with-parent), just without a grace.
        if (namespace !== undefined) killGroup(namespace.init, signal)
        if (namespace === undefined || signal === "SIGKILL") killGroup(pid, signal)
      }
      const countLive = () =>
        inNamespace === undefined
          ? countGroup(pid)
          : namespaceEnded
          ? 0
          : namespace === undefined
          ? countGroup(pid)
          : countNamespace(namespace.inode, namespace.init)
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
        if (namespaceEnded) return yield* Deferred.await(closedDeferred)
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
        if (!killedLive) return
        let delay = 1
        for (let waited = 0; waited < 3000; waited += delay) {
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

/** Why `bwrap` cannot contain commands here, or `undefined` when it can. */
export type ProbeResult = { readonly _tag: "Works" } | { readonly _tag: "Missing" } | { readonly _tag: "Broken"; readonly reason: string }

/**
 * Runs `true` the way every command will run (same flags, same init), bounded by `timeout`.
 * bwrap can be installed and still fail: no unprivileged user namespaces, a container without
 * CAP_SYS_ADMIN to mount /proc, a seccomp profile that forbids `clone(CLONE_NEWPID)`.
 */
export const probeBwrap = (
  bwrap = "bwrap",
  timeout: Duration.DurationInput = Duration.seconds(2),
  view: ReadonlyArray<string> = FULL_VIEW
): Effect.Effect<ProbeResult> =>
  Effect.async<ProbeResult>((resume) => {
    let stderr = ""
    let child: cp.ChildProcess
    try {
      child = cp.spawn(bwrap, bwrapArgs("/", "true", [], view), { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] })
    } catch (e) {
      resume(Effect.succeed({ _tag: "Broken", reason: e instanceof Error ? e.message : String(e) }))
      return
    }
    let reported = false
    child.stderr!.setEncoding("utf8")
    child.stderr!.on("data", (text: string) => void (stderr += text))
    // Our init reports `true`'s status on fd 4 (then exits, or waits to be killed): that report is success.
    const report = child.stdio[4] as NodeJS.ReadableStream
    report.setEncoding("utf8")
    report.on("data", (text: string) => {
      if (text.startsWith("0")) {
        reported = true
        child.kill("SIGKILL")
        resume(Effect.succeed({ _tag: "Works" }))
      }
    })
    report.on("error", () => {})
    child.on("error", (e: NodeJS.ErrnoException) =>
      resume(Effect.succeed(e.code === "ENOENT" ? { _tag: "Missing" } : { _tag: "Broken", reason: e.message })))
    // `close` (all pipes closed) rather than `exit`: init reports and exits at once, so bwrap's exit
    // can be seen before the report is read.
    child.on("close", (code, signal) => {
      if (reported) return
      resume(Effect.succeed({ _tag: "Broken", reason: stderr.trim() || `bwrap exited with ${signal ?? code}` }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  }).pipe(
    Effect.timeoutTo({
      duration: timeout,
      onSuccess: (r): ProbeResult => r,
      onTimeout: (): ProbeResult => ({ _tag: "Broken", reason: `no answer within ${Duration.format(timeout)}` })
    })
  )
