/**
 * The script a call runs: the user's command, preceded on the same line (so bash's error messages
 * keep the user's line numbers) by what records where the shell ended (`pwd -P`, so a `cd`
 * persists to the next call) and its `$?` (to tell `exit 143` from a SIGTERM death in a pid
 * namespace, see `NamespaceInit.namespaceStatus`).
 *
 * Both are recorded by an EXIT trap, which a user's own `trap … EXIT` would replace and a final
 * `exec` would skip. So each session writes a small bash file, loaded through `BASH_ENV` before the
 * command is parsed (bash reads it for `-c` even with `--norc`), that:
 * - wraps `trap`: after the user's `trap`, the EXIT handler becomes ours followed by theirs (ours
 *   passes `$?` through, so theirs sees the real status); a reset (`trap - EXIT`) leaves ours;
 * - makes `exec` an alias that records the cwd just before the shell is replaced. An alias, not a
 *   function: `exec >log` must keep its redirections, which a function call would undo. The record
 *   is an assignment's command substitution (`_=$(…) exec …`), so the alias stays ONE simple
 *   command (`a && exec b || c` keeps its meaning), and `_` is the variable bash sets for every
 *   program anyway, so nothing new reaches the program's environment;
 * - unsets `BASH_ENV`, so the user's own bash scripts do not load it.
 * The file is read by bash in one go; sent inline, the pre-spawned namespace's init would read
 * these ~900 bytes a byte at a time (see `Prewarm.PREWARMED_MAX_SCRIPT`), costing every call.
 *
 * Known limit: `exec` in a pipeline element or a `{ …; } &` group that `cd`ed records that cwd;
 * the main shell's own EXIT trap (or `exec`) overwrites it later, so it matters only when the main
 * shell then dies by SIGKILL.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** POSIX single quotes: safe for any string. */
export const shellQuote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`

/** The session's bash file (see above). Names start with `__dsh_acp_` to stay out of the user's way. */
export const ENV_FILE_TEXT = [
  `unset BASH_ENV`,
  // Records `$?` and the cwd into the files the call names (variables set by the call's first line).
  `__dsh_acp_exit() { local s=$?; { [ -z "\${__dsh_acp_x-}" ] || echo "$s" > "$__dsh_acp_x"; [ -z "\${__dsh_acp_c-}" ] || pwd -P > "$__dsh_acp_c"; } 2>/dev/null; return "$s"; }`,
  `__dsh_acp_keep() { builtin trap -- "__dsh_acp_exit; $2" EXIT; }`,
  // In a subshell the EXIT trap is the subshell's own: left alone.
  `trap() {`,
  `  builtin trap "$@" || return`,
  `  [ "$BASHPID" = "$$" ] || return 0`,
  `  local h; h=$(builtin trap -p EXIT)`,
  `  case "$h" in`,
  `    "trap -- '__dsh_acp_exit"*) ;;`,
  `    "") builtin trap __dsh_acp_exit EXIT ;;`,
  `    *) eval "__dsh_acp_keep \${h#trap }" ;;`,
  `  esac`,
  `}`,
  `shopt -s expand_aliases`,
  // BASH_SUBSHELL is 1 inside this substitution when `exec` runs in the main shell.
  `alias exec='_=$( [ "$BASH_SUBSHELL" != 1 ] || [ -z "\${__dsh_acp_c-}" ] || pwd -P > "$__dsh_acp_c" 2>/dev/null ) exec '`,
  ``
].join("\n")

/** Writes the session's bash file into `dir`; `undefined` when it cannot (calls then use {@link inlineScript}). */
export const writeEnvFile = (dir: string): string | undefined => {
  const file = path.join(dir, "bash-env")
  try {
    fs.writeFileSync(file, ENV_FILE_TEXT, { mode: 0o600 })
    return file
  } catch {
    return undefined
  }
}

export interface Records {
  /** Where the final `pwd -P` goes (foreground calls without `workdir`). */
  readonly cwdFile?: string | undefined
  /** Where `$?` goes (in a pid namespace). */
  readonly exitFile?: string | undefined
}

/** The script for a shell that loads the session's bash file (`BASH_ENV`). */
export const script = (command: string, records: Records): string => {
  const vars = [
    ...(records.cwdFile === undefined ? [] : [`__dsh_acp_c=${shellQuote(records.cwdFile)}`]),
    ...(records.exitFile === undefined ? [] : [`__dsh_acp_x=${shellQuote(records.exitFile)}`])
  ]
  return vars.length === 0 ? command : `${vars.join(" ")}; builtin trap __dsh_acp_exit EXIT; ${command}`
}

/** Without the bash file: a plain EXIT trap (a user's trap or a final `exec` then loses the records). */
export const inlineScript = (command: string, records: Records): string => {
  const onExit = [
    ...(records.exitFile === undefined ? [] : [`echo $? > ${shellQuote(records.exitFile)} 2>/dev/null`]),
    ...(records.cwdFile === undefined ? [] : [`pwd -P > ${shellQuote(records.cwdFile)} 2>/dev/null`])
  ]
  return onExit.length === 0 ? command : `trap ${shellQuote(onExit.join("; "))} EXIT; ${command}`
}
