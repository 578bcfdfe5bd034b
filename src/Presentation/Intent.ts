/**
 * Render intents: what a tool tells a UI about its call and its result, as one closed, tagged
 * union for each (see `/spec/presentation.md`). A tool returns exactly one intent per call and one
 * per result; the bridge switches on the tag exhaustively, so a new intent does not compile until
 * the bridge renders it. No ACP types here: `Bridge/Mapping` owns the wire, and a second UI (a
 * TUI, a web page, a session log) reads the same data. Schemas, so a log can store and re-read them.
 */
import * as Schema from "effect/Schema"
import { ExitStatus, isSuccess } from "../Terminal/ExitStatus.js"

/** ACP's tool kinds, which every UI we know groups by. */
export const ToolKind = Schema.Literal("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other")
export type ToolKind = typeof ToolKind.Type

/** A file (or directory) a call touches: `path` absolute, `line` 1-based. Editors follow it. */
export const Location = Schema.Struct({
  path: Schema.String,
  line: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true })
})
export type Location = typeof Location.Type

export const Text = Schema.TaggedStruct("Text", { text: Schema.String })
export type Text = typeof Text.Type
export const text = (value: string): Text => ({ _tag: "Text", text: value })

/** One file's change: `oldText` null for a new file; a deleted file has `newText` "". */
export const FileDiff = Schema.Struct({
  path: Schema.String,
  oldText: Schema.NullOr(Schema.String),
  newText: Schema.String
})
export type FileDiff = typeof FileDiff.Type

const content = Schema.optionalWith(Schema.Array(Text), { default: () => [] })
const locations = Schema.optionalWith(Schema.Array(Location), { default: () => [] })
/** The arguments, shown to clients as they were given (ACP `rawInput`). */
const input = Schema.optionalWith(Schema.Unknown, { exact: true })
/** Small structured facts about a result (exit code, truncation; ACP `rawOutput`), never the output again. */
const facts = Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { exact: true })

/**
 * A command the agent runs, shown as a terminal in `cwd` (absolute). `content` goes above the
 * terminal (a description, a task's id). `kind` is `execute` unless the command is plainly a read,
 * a search or a fetch; the card stays a terminal either way.
 */
export const TerminalCall = Schema.TaggedStruct("Terminal", {
  title: Schema.String,
  kind: Schema.optionalWith(ToolKind, { default: () => "execute" }),
  cwd: Schema.String,
  content,
  locations,
  input
})

/** Anything that is not a command: a read, a search, a fetch, a thought. */
export const GenericCall = Schema.TaggedStruct("Generic", {
  title: Schema.String,
  kind: ToolKind,
  content,
  locations,
  input
})

/** A proposed or applied edit. */
export const DiffCall = Schema.TaggedStruct("Diff", {
  title: Schema.String,
  kind: Schema.optionalWith(ToolKind, { default: () => "edit" }),
  diffs: Schema.Array(FileDiff),
  locations,
  input
})

export const CallIntent = Schema.Union(TerminalCall, GenericCall, DiffCall)
export type CallIntent = typeof CallIntent.Type

export const Status = Schema.Literal("completed", "failed")
export type Status = typeof Status.Type

/**
 * The end of a terminal: its output (what the card shows when nothing was streamed live), how it
 * ended, and the status lines that follow the output in the text a model reads (exit line last).
 * The status is `completed` iff the command exited 0. A text-only client's ```` ```console ````
 * block is derived from these by the bridge, never encoded by the tool.
 */
export const TerminalResult = Schema.TaggedStruct("Terminal", {
  output: Schema.String,
  exit: ExitStatus,
  statusLines: Schema.Array(Schema.String),
  facts
})

export const GenericResult = Schema.TaggedStruct("Generic", {
  status: Status,
  content,
  locations,
  facts
})

export const DiffResult = Schema.TaggedStruct("Diff", {
  status: Status,
  diffs: Schema.Array(FileDiff),
  locations,
  facts
})

export const ResultIntent = Schema.Union(TerminalResult, GenericResult, DiffResult)
export type ResultIntent = typeof ResultIntent.Type

export type TerminalCall = typeof TerminalCall.Type
export type GenericCall = typeof GenericCall.Type
export type DiffCall = typeof DiffCall.Type
export type TerminalResult = typeof TerminalResult.Type
export type GenericResult = typeof GenericResult.Type
export type DiffResult = typeof DiffResult.Type

/** The text a terminal's result reads as: its output, then its status lines. */
export const transcript = (result: TerminalResult): string => result.output + result.statusLines.join("\n")

/**
 * The files a call changed, found after it ended (a display: the model is not told). Shown after
 * the call's own content: diffs, then notes for files shown without one (binary, too large, more
 * than the cap), with a location for each file.
 */
export const ChangedFiles = Schema.Struct({
  diffs: Schema.Array(FileDiff),
  notes: Schema.Array(Text),
  locations: Schema.Array(Location)
})
export type ChangedFiles = typeof ChangedFiles.Type

export const NO_CHANGES: ChangedFiles = { diffs: [], notes: [], locations: [] }

export const isEmpty = (changed: ChangedFiles): boolean => changed.diffs.length === 0 && changed.notes.length === 0 && changed.locations.length === 0

/** How a result reads as a call's status: a terminal `completed` iff it exited 0. */
export const statusOf = (result: ResultIntent): Status =>
  result._tag === "Terminal" ? (isSuccess(result.exit) ? "completed" : "failed") : result.status

/** A failed generic result that says `message` (after `before`, e.g. the call's description). */
export const failure = (message: string, before: ReadonlyArray<Text> = []): GenericResult =>
  GenericResult.make({ status: "failed", content: [...before, text(message)] })

/** The content a call showed, for a result that must re-state it (a rejected call, say). */
export const callContent = (call: CallIntent): ReadonlyArray<Text> => (call._tag === "Diff" ? [] : call.content)
