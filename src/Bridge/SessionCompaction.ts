/**
 * Keeps a session log within its bound: when it grows past it, the log is rewritten with its
 * newest turns only (about half the bound, so a rewrite is rare), a `dropped` marker where the
 * older ones were, and the harness's state merged into one record — the history a model session
 * needs to continue is never dropped, only what the client would be shown again.
 */
import * as SessionLog from "./SessionLog.js"

/** The lines of the rewritten log (each with its newline). */
export const compact = (parsed: SessionLog.Parsed, targetBytes: number): ReadonlyArray<string> => {
  let title = parsed.header.title
  let dropped = 0
  let cwd: string | undefined
  let memory: Array<unknown> = []
  let mode: string | undefined
  const turns: Array<Array<SessionLog.Record>> = [[]]
  for (const record of parsed.records) {
    switch (record.t) {
      case "title":
        title = record.title
        break
      case "dropped":
        dropped += record.turns
        break
      case "state":
        cwd = record.cwd
        memory = record.reset === true ? [...record.memory] : [...memory, ...record.memory]
        break
      case "mode":
        mode = record.mode
        break
      case "prompt":
        turns.push([record])
        break
      default:
        turns.at(-1)!.push(record)
    }
  }
  const header = SessionLog.headerLine({ ...parsed.header, ...(title === undefined ? {} : { title }) })
  const lineOf = (record: SessionLog.Record) => {
    const line = SessionLog.recordLine(record)
    return line._tag === "Right" ? line.right : ""
  }
  const state = (cwd === undefined ? "" : lineOf({ t: "state", cwd, memory, reset: true })) +
    (mode === undefined ? "" : lineOf({ t: "mode", mode }))
  const titleLine = title === undefined ? "" : lineOf({ t: "title", title })
  // What is always kept, and room for the marker's line.
  let budget = targetBytes - [header, state, titleLine].reduce((n, l) => n + Buffer.byteLength(l), 0) - 64
  // Newest first, whole turns only; the records before the first prompt (a background card's end
  // after a restart, say) count as the oldest turn.
  const kept: Array<ReadonlyArray<string>> = []
  for (let i = turns.length - 1; i >= 0; i--) {
    const lines = turns[i]!.map(lineOf)
    const size = lines.reduce((n, l) => n + Buffer.byteLength(l), 0)
    if (size > budget && kept.length > 0) {
      dropped += turns.slice(0, i + 1).filter((t) => t[0]?.t === "prompt").length
      break
    }
    budget -= size
    kept.unshift(lines)
  }
  return [
    header,
    titleLine,
    ...(dropped === 0 ? [] : [lineOf({ t: "dropped", turns: dropped })]),
    ...kept.flat(),
    state
  ].filter((l) => l !== "")
}
