/**
 * How a bash call looks: its card when it starts and when it ends. Execution lives in `Bash`; this
 * module recovers the exit for the terminal card by DECODING the rendered result with the same
 * Schema that rendered it (`StatusLines`), so the card and the model can never disagree about how a
 * command ended, and a replayed log gives the same cards.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import { isAbsolute, resolve } from "node:path"
import * as StatusLines from "../../Bash/StatusLines.js"
import * as Intent from "../../Presentation/Intent.js"
import type { BashArgs } from "./BashArgs.js"
import * as Classify from "./Classify.js"

/** The directory a call runs in: `workdir` resolved against the session cwd, or the session cwd. */
export const callCwd = (args: BashArgs, sessionCwd: string): string =>
  args.workdir === undefined || args.workdir === ""
    ? sessionCwd
    : isAbsolute(args.workdir) ? resolve(args.workdir) : resolve(sessionCwd, args.workdir)

/**
 * Intents built here are well-typed by construction: `make` skips re-validating them (it showed in
 * the per-call CPU profile). The property tests check every intent against its Schema.
 */
const OWN = { disableValidation: true } as const

const descriptionContent = (args: BashArgs): ReadonlyArray<Intent.Text> =>
  args.description !== undefined && args.description.trim() !== "" ? [Intent.text(args.description)] : []

/**
 * A foreground call is a terminal card in the call's directory, its title the exact command; a
 * plain read or search also gets its kind and the files it names (display only). A background
 * start is NOT a terminal: its call returns within about a second with `[background task ID
 * started]`, while the task lives on in its own card (see {@link presentTaskCall}). Giving the
 * starter a terminal would leave a card that can never get an honest exit.
 */
export const presentCall = (args: BashArgs, context: { readonly cwd: string }): Intent.CallIntent => {
  if (args.run_in_background === true) {
    return Intent.GenericCall.make({ title: args.command, kind: "execute", content: descriptionContent(args), input: args }, OWN)
  }
  const cwd = callCwd(args, context.cwd)
  const { kind, locations } = Classify.classify(args.command, cwd)
  return Intent.TerminalCall.make({ title: args.command, kind, cwd, content: descriptionContent(args), locations, input: args }, OWN)
}

/** The card of a background task itself: a terminal card that ends with the task's own exit line. */
export const presentTaskCall = (args: BashArgs, taskId: string, context: { readonly cwd: string }): Intent.CallIntent =>
  Intent.TerminalCall.make({
    title: args.command,
    cwd: callCwd(args, context.cwd),
    content: [...descriptionContent(args), Intent.text(`background task ${taskId}`)],
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
 * The result from its parts.
 * - Exited / Signaled: a terminal result (`completed` iff the command exited 0).
 * - BackgroundStarted: a generic `completed` (the start succeeded) with the starter's text: the
 *   task's exit belongs to the task's card.
 */
export const presentParts = (args: BashArgs, parts: StatusLines.ResultParts, rendered?: string): Intent.ResultIntent => {
  const end = parts.end
  // `rendered` is `render(parts)` when the caller has it (it parsed it): no second encode per call.
  const text = rendered ?? StatusLines.render(parts)
  if (end._tag === "BackgroundStarted") {
    return Intent.GenericResult.make({
      status: "completed",
      content: [...descriptionContent(args), Intent.text(text)],
      facts: facts(parts)
    }, OWN)
  }
  return Intent.TerminalResult.make({
    output: parts.output,
    exit: end,
    statusLines: text.slice(parts.output.length).split("\n"),
    facts: facts(parts)
  }, OWN)
}

/**
 * The result, recovered from the rendered text alone (what a log keeps). Text that does not decode
 * (the executor's own failure, say) is a failed generic result showing the text, never a throw: a
 * UI must still be able to close the card.
 */
export const presentResult = (args: BashArgs, result: string, _context: { readonly cwd: string }): Intent.ResultIntent => {
  const parsed = StatusLines.parse(result)
  if (Either.isLeft(parsed)) {
    return Intent.GenericResult.make({
      status: "failed",
      content: [...descriptionContent(args), Intent.text(result)],
      facts: { error: "unrecognized result", message: ParseResult.TreeFormatter.formatErrorSync(parsed.left) }
    }, OWN)
  }
  return presentParts(args, parsed.right, result)
}
