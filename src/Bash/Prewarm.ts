/**
 * A pid namespace started ahead of its call (bwrap's start-up is most of what a namespace costs a
 * call): bwrap and our init, waiting on a pipe (fd 6) for the cwd and the script. See
 * `NamespaceInit.PREWARMED_INIT` for the init's side.
 */
import * as cp from "node:child_process"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { FULL_VIEW, NAMESPACE_FLAGS, PREWARMED_INIT } from "./NamespaceInit.js"

/** Signals a process group, ignoring ESRCH (already gone). */
export const killGroup = (pgid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: nothing left in the group; EPERM cannot happen for our own children.
  }
}

/** What a spare must match to run a call: the program, its arguments bar the script, the environment bar `PWD`. */
export interface CallShape {
  readonly file: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
}

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
export const goPipe = (child: cp.ChildProcess): NodeJS.WritableStream => (child.stdio as ReadonlyArray<unknown>)[6] as NodeJS.WritableStream

const sameArgs = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i])

/** A spare started for another profile (the session's mode changed since) must never run the call. */
export const prewarmedFits = (p: Prewarmed, bwrap: string, view: ReadonlyArray<string>, options: CallShape): boolean => {
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

