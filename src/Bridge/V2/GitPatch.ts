/**
 * One file's change as a git-style unified patch, the text a v2 `diff` content carries next to its
 * `changes` (the v2 schema has no old/new text fields). One hunk around the changed lines, with
 * up to three lines of context: enough for a client to render the change, without a diff library.
 */
import type { FileDiff } from "../../Presentation/Intent.js"

const CONTEXT = 3

/** Lines of a text, and whether it ends with a newline (`git` marks a missing one). */
const linesOf = (text: string): { readonly lines: ReadonlyArray<string>; readonly eol: boolean } => {
  if (text === "") return { lines: [], eol: true }
  const eol = text.endsWith("\n")
  return { lines: (eol ? text.slice(0, -1) : text).split("\n"), eol }
}

const range = (start: number, count: number) => (count === 0 ? `${start},0` : count === 1 ? `${start + 1}` : `${start + 1},${count}`)

export type Operation = "add" | "delete" | "modify"

/** `oldText` null is a new file; `newText` "" with a non-empty old text a deleted one (the Intent's convention). */
export const operationOf = (diff: FileDiff): Operation =>
  diff.oldText === null ? "add" : diff.newText === "" && diff.oldText !== "" ? "delete" : "modify"

export const render = (diff: FileDiff): string => {
  const operation = operationOf(diff)
  const before = linesOf(diff.oldText ?? "")
  const after = linesOf(diff.newText)
  const header = [
    `diff --git a${diff.path} b${diff.path}`,
    ...(operation === "add" ? ["new file mode 100644"] : operation === "delete" ? ["deleted file mode 100644"] : []),
    `--- ${operation === "add" ? "/dev/null" : `a${diff.path}`}`,
    `+++ ${operation === "delete" ? "/dev/null" : `b${diff.path}`}`
  ]
  // The changed region: what is left after the common head and the common tail.
  let head = 0
  while (head < before.lines.length && head < after.lines.length && before.lines[head] === after.lines[head]) head++
  let tail = 0
  while (
    tail < before.lines.length - head && tail < after.lines.length - head &&
    before.lines[before.lines.length - 1 - tail] === after.lines[after.lines.length - 1 - tail]
  ) tail++
  // A changed final newline is a change of the last line.
  if (before.eol !== after.eol && tail > 0) tail--
  if (head === before.lines.length && head === after.lines.length && before.eol === after.eol) return header.join("\n") + "\n"
  const start = Math.max(0, head - CONTEXT)
  const oldEnd = Math.min(before.lines.length, before.lines.length - tail + CONTEXT)
  const newEnd = Math.min(after.lines.length, after.lines.length - tail + CONTEXT)
  const body: Array<string> = []
  const noEol = "\\ No newline at end of file"
  for (let i = start; i < head; i++) body.push(` ${before.lines[i]}`)
  for (let i = head; i < before.lines.length - tail; i++) {
    body.push(`-${before.lines[i]}`)
    if (i === before.lines.length - 1 && !before.eol) body.push(noEol)
  }
  for (let i = head; i < after.lines.length - tail; i++) {
    body.push(`+${after.lines[i]}`)
    if (i === after.lines.length - 1 && !after.eol) body.push(noEol)
  }
  for (let i = after.lines.length - tail; i < newEnd; i++) {
    body.push(` ${after.lines[i]}`)
    if (i === after.lines.length - 1 && !after.eol) body.push(noEol)
  }
  const hunk = `@@ -${range(start, oldEnd - start)} +${range(start, newEnd - start)} @@`
  return [...header, hunk, ...body].join("\n") + "\n"
}
