/**
 * The bash tool as a model sees it and as a UI shows it. Execution lives in `BashLive`; this module
 * only says what a call and its result look like, and recovers the exit for the terminal card by
 * decoding the rendered result with the same Schema that rendered it (`StatusLines`), so the card
 * and the model can never disagree about how a command ended.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import { isAbsolute, resolve } from "node:path"
import type { CallPresentation, ResultPresentation, TextContent } from "../Presentation/Presentation.js"
import { text } from "../Presentation/Presentation.js"
import type { Tool } from "../Presentation/Tool.js"
import { BashArgs, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS } from "./BashArgs.js"
import { isSuccess } from "./ExitStatus.js"
import * as StatusLines from "./StatusLines.js"

export const NAME = "Bash"

export const DESCRIPTION = `Runs a bash script (bash --noprofile --norc -c) on the user's machine and returns its output.

- stdout and stderr are merged in arrival order. stdin is /dev/null: interactive prompts fail instead of waiting, so pass flags such as --yes.
- The result is the output followed by status lines, always ending with how the command ended:
  [exit code: N] for a normal exit (0 included), or [killed by signal: SIGTERM] for a signal death.
  Other status lines may come before it: [output truncated: N chars omitted, full output: PATH] (read PATH for the rest),
  [timeout clamped to 600s], [timed out after 120s], [background jobs killed: N].
- The working directory persists across calls of this session: a \`cd\` in one call applies to the next. Exported variables and aliases do not persist. \`workdir\` sets the directory for one call only (absolute, or relative to the current one).
- timeout_ms defaults to ${DEFAULT_TIMEOUT_MS} (${DEFAULT_TIMEOUT_MS / 1000} s) and is at most ${MAX_TIMEOUT_MS} (${MAX_TIMEOUT_MS / 1000} s). On timeout the whole process tree gets SIGTERM, then SIGKILL 2 s later.
- Output is bounded: about 30000 characters, the head and the tail, ANSI colours removed and \\r progress rewrites resolved; the full output is saved to a file named in the truncation line.
- Processes left running with & are killed when the command ends. For servers and watchers use run_in_background: true; the call returns at once with [background task ID started] and the task, owned by this session, keeps running until it exits, is killed, or the session ends.`

/** The directory a call runs in: `workdir` resolved against the session cwd, or the session cwd. */
export const callCwd = (args: BashArgs, sessionCwd: string): string =>
  args.workdir === undefined || args.workdir === ""
    ? sessionCwd
    : isAbsolute(args.workdir) ? resolve(args.workdir) : resolve(sessionCwd, args.workdir)

const descriptionContent = (args: BashArgs): ReadonlyArray<TextContent> =>
  args.description !== undefined && args.description.trim() !== "" ? [text(args.description)] : []

/**
 * A foreground call is a terminal card in the call's directory. A background start is NOT: its call
 * returns within about a second with `[background task ID started]`, while the task lives on and
 * reports through its own card (see {@link presentTaskCall}). Giving the starter a terminal would
 * leave a card that can never get an honest exit.
 */
export const presentCall = (args: BashArgs, context: { readonly cwd: string }): CallPresentation => ({
  title: args.command,
  kind: "execute",
  content: descriptionContent(args),
  ...(args.run_in_background === true ? {} : { terminal: { cwd: callCwd(args, context.cwd) } }),
  input: args
})

/** The card of a background task itself: a terminal card that ends with the task's own exit line. */
export const presentTaskCall = (args: BashArgs, taskId: string, context: { readonly cwd: string }): CallPresentation => ({
  title: args.command,
  kind: "execute",
  content: [...descriptionContent(args), text(`background task ${taskId}`)],
  terminal: { cwd: callCwd(args, context.cwd) },
  input: args
})

/** The small structured facts of a result (`rawOutput`): never the output itself. */
export const facts = (parts: StatusLines.ResultParts): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  switch (parts.end._tag) {
    case "Exited":
      out.exit_code = parts.end.code
      out.signal = null
      break
    case "Signaled":
      out.exit_code = null
      out.signal = parts.end.signal
      break
    case "BackgroundStarted":
      out.background_task_id = parts.end.taskId
      break
  }
  if (parts.truncated !== undefined) {
    out.truncated = {
      omitted_chars: parts.truncated.omittedChars,
      ...(parts.truncated.savedTo !== undefined ? { full_output: parts.truncated.savedTo } : {})
    }
  }
  if (parts.timedOutAfterMs !== undefined) {
    out.timed_out = true
    out.timed_out_after_ms = parts.timedOutAfterMs
  }
  if (parts.timeoutClampedMs !== undefined) out.timeout_clamped_ms = parts.timeoutClampedMs
  if (parts.backgroundJobsKilled !== undefined) out.background_jobs_killed = parts.backgroundJobsKilled
  return out
}

/**
 * The result, recovered from the rendered text alone.
 * - Exited / Signaled: a terminal result; `completed` iff the command exited 0.
 * - BackgroundStarted: `completed` (the start succeeded) with the starter's text as plain content
 *   and no terminal: the task's exit belongs to the task's card.
 * - Text that does not decode (e.g. an error message instead of a result): `failed`, showing the
 *   text and the parse error, never throwing — a UI must still be able to close the card.
 */
export const presentResult = (args: BashArgs, result: string, _context: { readonly cwd: string }): ResultPresentation => {
  const callContent = descriptionContent(args)
  const parsed = StatusLines.parse(result)
  if (Either.isLeft(parsed)) {
    return {
      status: "failed",
      content: [...callContent, text(result)],
      facts: { error: "unrecognized result", message: ParseResult.TreeFormatter.formatErrorSync(parsed.left) }
    }
  }
  const parts = parsed.right
  const end = parts.end
  if (end._tag === "BackgroundStarted") {
    return { status: "completed", content: [...callContent, text(result)], facts: facts(parts) }
  }
  return {
    status: isSuccess(end) ? "completed" : "failed",
    content: callContent,
    terminal: { output: parts.output, exit: end, transcript: result },
    facts: facts(parts)
  }
}

export const BashTool: Tool<BashArgs> = {
  name: NAME,
  description: DESCRIPTION,
  parameters: BashArgs,
  presentCall,
  presentResult
}
