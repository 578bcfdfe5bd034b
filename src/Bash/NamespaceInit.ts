/**
 * The pid-namespace protocol's shell side: bwrap's flags, our init (pid 1 of each namespace), and
 * how its report of the command's status reads. The Node side (bwrap's info fd, init's report fd)
 * is {@link NamespaceWatch}; a namespace started ahead of its call is `Prewarm`.
 */
import * as os from "node:os"
import { type ExitStatus, exited, signaled } from "../Terminal/ExitStatus.js"

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
export const PREWARMED_INIT = [
  `exec 5>&2 2>/dev/null`,
  // Prefixed variables, as in Prewarm.GROUP_SPARE_INIT: the command sees the agent's environment as it is.
  `IFS= read -r __dsh_acp_d <&6 || exit 0`,
  `__dsh_acp_s=; __dsh_acp_n=; while IFS= read -r __dsh_acp_l <&6; do __dsh_acp_s="$__dsh_acp_s$__dsh_acp_n$__dsh_acp_l"; __dsh_acp_n='\n'; done`,
  `exec 6<&-`,
  // `cd` sets OLDPWD, which a fresh spawn (bwrap's --chdir) leaves as the agent's: put it back.
  `__dsh_acp_o=\${OLDPWD-}; __dsh_acp_h=\${OLDPWD+1}`,
  `cd -- "$__dsh_acp_d" 2>&5 || { echo "1 alone" >&4; exit 0; }`,
  `if [ "$__dsh_acp_h" ]; then OLDPWD=$__dsh_acp_o; else unset OLDPWD; fi`,
  `export PWD="$__dsh_acp_d"`,
  `(exec "$@" "$__dsh_acp_s" 2>&5 5>&- 4>&-)`,
  ...INIT_AFTER_COMMAND
].join("; ")


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
