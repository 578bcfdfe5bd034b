/**
 * The text fallback of a terminal card: a Markdown ```` ```console ```` fence around the rendered
 * result, for clients that cannot show a terminal. Markdown is the only thing such a client is
 * sure to render, so the fence must survive any output (backticks, ANSI colours).
 */
import { stripAnsi } from "../Terminal/Ansi.js"

/** The longest run of backticks in `text` (0 when there is none). */
export const longestBacktickRun = (text: string): number => {
  let longest = 0
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length)
  return longest
}

/**
 * `text` ANSI-stripped inside a fence longer than any backtick run in it (at least three), so no
 * line of the output can close the fence early.
 */
export const consoleFence = (text: string, info = "console"): string => {
  const body = stripAnsi(text)
  const fence = "`".repeat(Math.max(3, longestBacktickRun(body) + 1))
  const ending = body === "" || body.endsWith("\n") ? "" : "\n"
  return `${fence}${info}\n${body}${ending}${fence}`
}
