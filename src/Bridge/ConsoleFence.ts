/**
 * The text fallback of a terminal card: a Markdown ```` ```console ```` fence around the rendered
 * result, for clients that cannot show a terminal. Markdown is the only thing such a client is
 * sure to render, so the fence must survive any output (backticks, ANSI colours).
 */

// CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ESC \`, cut at a newline when unterminated), the other
// ESC sequences (`ESC (B`, `ESC 7`, …), 8-bit CSI, and a bare ESC left over: none means anything in
// Markdown.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b\n]*(?:\u0007|\u001b\\)?|\u001b[ -/]*[0-~]|\u001b|\u009b[0-?]*[ -/]*[@-~]/g

/** Removes ANSI escape sequences (colours, cursor moves, hyperlinks). */
export const stripAnsi = (text: string): string => text.replace(ANSI, "")

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
