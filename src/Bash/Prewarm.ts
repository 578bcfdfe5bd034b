/**
 * A process started ahead of its call, waiting on a pipe (fd 6) for the cwd and the script: in a
 * pid namespace, bwrap and our init (see `NamespaceInit.PREWARMED_INIT`); in a process group, a
 * POSIX sh that becomes the call's bash ({@link GROUP_SPARE_INIT}).
 *
 * Why: `child_process.spawn` forks the agent and blocks its event loop until the child has exec'd
 * (measured 6.5-12 ms per spawn on a 2-core machine, more than the whole command `true` takes).
 * A spare is forked while the agent is idle, so the call itself only writes a pipe.
 */
import * as cp from "node:child_process"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Containment } from "./ChildProcess.js"
import { signalGroup } from "./GroupSignal.js"
import { FULL_VIEW, NAMESPACE_FLAGS, PREWARMED_INIT } from "./NamespaceInit.js"

/** Signals a process group, ignoring ESRCH (already gone). */
export const killGroup = (pgid: number, signal: NodeJS.Signals): void => {
  signalGroup(pgid, signal)
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
 * A process group's spare: the sh reads the call (the cwd line, then the script's lines, as
 * {@link PREWARMED_INIT} does), closes the pipe and becomes `file args… script` by `exec`, so the
 * call's process is the group leader the spawn made, and its exit is the command's, as with a fresh
 * spawn. EOF before the cwd line (the session closed, the agent gone) ends it. A cwd removed since
 * the call checked it fails like the command `cd` would: sh's message and status 1.
 */
export const GROUP_SPARE_INIT = [
  // Its variables are prefixed: one the agent's environment exports (say `c`) would otherwise
  // reach the command changed, where a fresh spawn passes it as it is.
  `IFS= read -r __dsh_acp_d <&6 || exit 0`,
  `__dsh_acp_s=; __dsh_acp_n=; while IFS= read -r __dsh_acp_l <&6; do __dsh_acp_s="$__dsh_acp_s$__dsh_acp_n$__dsh_acp_l"; __dsh_acp_n='\n'; done`,
  `exec 6<&-`,
  // `cd` sets OLDPWD, which a fresh spawn (made in the cwd) leaves as the agent's: put it back.
  `__dsh_acp_o=\${OLDPWD-}; __dsh_acp_h=\${OLDPWD+1}`,
  `cd -- "$__dsh_acp_d" || exit 1`,
  `if [ "$__dsh_acp_h" ]; then OLDPWD=$__dsh_acp_o; else unset OLDPWD; fi`,
  `export PWD="$__dsh_acp_d"`,
  `exec "$@" "$__dsh_acp_s"`
].join("; ")

/**
 * A process started ahead of its command, waiting on a pipe for the cwd and the script of
 * `file args… script`. Each command still gets a fresh process (and namespace) of its own; an
 * unused one is ended by {@link disposePrewarmed} (or by the agent's death: EOF on the pipe, and in
 * a namespace `--die-with-parent`).
 */
export interface Prewarmed {
  /** The namespace's bwrap; undefined for a process group's spare. */
  readonly bwrap: string | undefined
  readonly view: ReadonlyArray<string>
  readonly file: string
  /** The arguments before the script. */
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly child: cp.ChildProcess
  /** The spare (bwrap, or the group's sh) failed or was killed: it cannot be used. */
  dead: boolean
  /** What bwrap wrote on its info fd so far (read from the start, so it is known when the call comes). */
  info: string
}

/**
 * Starts a spare for `containment`: bwrap and its waiting init, or a waiting sh in a group of its
 * own. Never fails (a failure shows as `dead`, and the call spawns afresh).
 */
export const prewarm = (
  containment: Containment,
  file: string,
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
): Prewarmed | undefined => {
  const bwrap = containment._tag === "PidNamespace" ? containment.bwrap : undefined
  const view = containment._tag === "PidNamespace" ? containment.view ?? FULL_VIEW : []
  let child: cp.ChildProcess
  try {
    child = bwrap === undefined
      // /bin/sh, not `sh` from the command's PATH: without one there, every spare would die at once.
      ? cp.spawn("/bin/sh", ["-c", GROUP_SPARE_INIT, "dsh-acp-spare", file, ...args], {
        cwd: "/",
        env,
        // 6: the call (cwd and script) from us, as in a namespace.
        stdio: ["ignore", "pipe", "pipe", "ignore", "ignore", "ignore", "pipe"],
        detached: true
      })
      : cp.spawn(
        bwrap,
        [...NAMESPACE_FLAGS, ...view, "--chdir", "/", "--info-fd", "3", "--", "sh", "-c", PREWARMED_INIT, "dsh-acp-init", file, ...args],
        // 3: bwrap's info, 4: init's report, 6: the call (cwd and script) from us.
        { cwd: "/", env, stdio: ["ignore", "pipe", "pipe", "pipe", "pipe", "ignore", "pipe"], detached: true }
      )
  } catch {
    return undefined
  }
  const prewarmed: Prewarmed = { bwrap, view, file, args, env, child, dead: child.pid === undefined, info: "" }
  if (bwrap !== undefined) {
    const info = child.stdio[3] as NodeJS.ReadableStream
    info.setEncoding("utf8")
    info.on("data", (text: string) => void (prewarmed.info += text))
    info.on("error", () => {})
  }
  child.on("error", () => void (prewarmed.dead = true))
  child.on("exit", () => void (prewarmed.dead = true))
  ;goPipe(child).on("error", () => {})
  return prewarmed
}

/** Ends an unused spare (EOF on its pipe, SIGKILL to its group) and waits, bounded, for it to be gone. */
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

/**
 * A spare started for another containment or profile (the session's mode changed since) must never
 * run the call.
 */
export const prewarmedFits = (p: Prewarmed, containment: Containment, options: CallShape): boolean => {
  if (p.dead || p.child.exitCode !== null || p.child.signalCode !== null) return false
  if (containment._tag === "PidNamespace") {
    if (p.bwrap !== containment.bwrap || !sameArgs(p.view, containment.view ?? FULL_VIEW)) return false
  } else if (p.bwrap !== undefined) return false
  if (p.file !== options.file || p.args.length !== options.args.length - 1 || options.cwd.includes("\n")) return false
  for (let i = 0; i < p.args.length; i++) if (p.args[i] !== options.args[i]) return false
  const { PWD: _pwd, ...env } = options.env
  const keys = Object.keys(env)
  if (keys.length !== Object.keys(p.env).length) return false
  for (const k of keys) if (p.env[k] !== env[k]) return false
  return true
}

