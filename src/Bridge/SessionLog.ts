/**
 * The persisted form of a session: one JSON record per line, append-only. The first line is a
 * header with a magic string and a version, so a file that is not ours is recognised and refused
 * before anything in it is believed. What follows is what the client was shown (prompts, agent
 * text, every card's events with its output folded to what the card displayed) and what the
 * harness needs to continue (its cwd and memory after each turn).
 *
 * Everything is a Schema: a record is encoded when written and decoded when read, so a log is
 * checked field by field on load, and the render intents inside are the same Schemas the tools use.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { HarnessEvent } from "../Harness/HarnessEvent.js"
import * as Intent from "../Presentation/Intent.js"

export const MAGIC = "dsh-acp/session-log"
export const VERSION = 1

export const Header = Schema.Struct({
  magic: Schema.Literal(MAGIC),
  v: Schema.Number,
  t: Schema.Literal("header"),
  id: Schema.String,
  /** The session's root directory (ACP `cwd`), absolute. */
  cwd: Schema.String,
  /** Which harness wrote it (`shell`, `model:<provider>:<model>`): shown, not enforced. */
  harness: Schema.String,
  createdAt: Schema.String,
  /** Set when a compaction rewrote the file (the title record may have been dropped with its turn). */
  title: Schema.optionalWith(Schema.String, { exact: true })
})
export type Header = typeof Header.Type

const Text = Schema.Struct({ text: Schema.String })
const Call = Schema.Struct({ callId: Schema.String })

/** The harness events a log keeps (`TurnEnded` is its own record). */
export const Event = Schema.Union(
  Schema.TaggedStruct("AgentText", Text.fields),
  Schema.TaggedStruct("AgentThought", Text.fields),
  Schema.TaggedStruct("ToolCallStarted", { ...Call.fields, presentation: Intent.CallIntent, pending: Schema.Boolean }),
  Schema.TaggedStruct("ToolCallRunning", Call.fields),
  Schema.TaggedStruct("ToolOutput", { ...Call.fields, data: Schema.String }),
  Schema.TaggedStruct("ToolCallCompleted", { ...Call.fields, presentation: Intent.ResultIntent }),
  Schema.TaggedStruct("ToolCallFilesChanged", { ...Call.fields, changed: Intent.ChangedFiles })
)
export type Event = Exclude<HarnessEvent, { readonly _tag: "TurnEnded" }>

export const PromptBlock = Schema.Union(
  Schema.TaggedStruct("Text", { text: Schema.String }),
  Schema.TaggedStruct("Other", { type: Schema.String })
)

export const StopReason = Schema.Literal("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")

export const Record = Schema.Union(
  /** A user prompt: a turn starts. */
  Schema.Struct({ t: Schema.Literal("prompt"), at: Schema.String, blocks: Schema.Array(PromptBlock) }),
  /** A harness event; `bg` when it came from the background stream (a task card), not from the turn. */
  Schema.Struct({ t: Schema.Literal("event"), bg: Schema.optionalWith(Schema.Boolean, { exact: true }), e: Event }),
  Schema.Struct({ t: Schema.Literal("turnEnd"), stopReason: StopReason }),
  /** The harness's state after a turn: its cwd; `memory` entries are appended to the earlier ones. */
  Schema.Struct({ t: Schema.Literal("state"), cwd: Schema.String, memory: Schema.Array(Schema.Unknown), reset: Schema.optionalWith(Schema.Boolean, { exact: true }) }),
  Schema.Struct({ t: Schema.Literal("title"), title: Schema.String }),
  /** The user switched the session's mode (`session/set_mode` or its config option). */
  Schema.Struct({ t: Schema.Literal("mode"), mode: Schema.String }),
  /** The oldest turns were dropped to keep the log within its bound. */
  Schema.Struct({ t: Schema.Literal("dropped"), turns: Schema.Int })
)
export type Record = typeof Record.Type
export type RecordEncoded = typeof Record.Encoded

const KNOWN = new Set(["prompt", "event", "turnEnd", "state", "title", "mode", "dropped"])

/** `make()`, called once on first use: compiling a parser at load would put it on every start. */
const once = <A>(make: () => A): () => A => {
  let value: A | undefined
  return () => (value ??= make())
}
// Reading a log (session/load) is rare; a start compiles none of these until a session writes.
const encodeRecord = once(() => Schema.encodeEither(Record))
const encodeHeader = once(() => Schema.encodeSync(Header))
const decodeRecord = once(() => Schema.decodeUnknownEither(Record))
const decodeHeader = once(() => Schema.decodeUnknownEither(Header))

/** One line (with its newline) for a record; `Left` when a value does not fit its Schema. */
export const recordLine = (record: Record): Either.Either<string, string> =>
  Either.match(encodeRecord()(record), {
    onLeft: (error) => Either.left(error.message),
    onRight: (encoded) => Either.right(`${JSON.stringify(encoded)}\n`)
  })

export const headerLine = (header: Header): string => `${JSON.stringify(encodeHeader()(header))}\n`

/** Why a log cannot be loaded; the message says what to do about it. */
export class LogError extends Schema.TaggedError<LogError>()("LogError", {
  reason: Schema.Literal("Foreign", "Newer", "Corrupt", "Unreadable"),
  message: Schema.String
}) {}

export interface Parsed {
  readonly header: Header
  readonly records: ReadonlyArray<Record>
  /** What was skipped and why (a torn last line, a record type from a newer version). */
  readonly warnings: ReadonlyArray<string>
}

const tryJson = (line: string): unknown => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

/**
 * Reads a log's text. Each write is one line ending in a newline, so a last line without one was
 * torn by a kill mid-write: it is skipped. Anything else that does not decode fails the whole log:
 * a session is replayed whole or not at all.
 */
export const parse = (text: string, file: string): Either.Either<Parsed, LogError> => {
  const lines = text.split("\n")
  const torn = lines.pop()!
  const warnings: Array<string> = []
  if (torn !== "") warnings.push(`${file}: the last line (${torn.length} bytes) was torn by an interrupted write; skipped`)
  const first = lines[0] === undefined ? undefined : tryJson(lines[0])
  const magic = typeof first === "object" && first !== null ? (first as { magic?: unknown }).magic : undefined
  if (magic !== MAGIC) {
    return Either.left(new LogError({ reason: "Foreign", message: `${file} is not a dsh-acp session log (no "${MAGIC}" header); refused` }))
  }
  const header = decodeHeader()(first)
  if (Either.isLeft(header)) return Either.left(new LogError({ reason: "Corrupt", message: `${file}: malformed header: ${header.left.message}` }))
  if (header.right.v > VERSION) {
    return Either.left(new LogError({ reason: "Newer", message: `${file} was written by a newer dsh-acp (log version ${header.right.v}); this one reads version ${VERSION}` }))
  }
  const records: Array<Record> = []
  for (let i = 1; i < lines.length; i++) {
    const json = tryJson(lines[i]!)
    const t = typeof json === "object" && json !== null ? (json as { t?: unknown }).t : undefined
    if (typeof t === "string" && !KNOWN.has(t)) {
      warnings.push(`${file}:${i + 1}: unknown record type ${JSON.stringify(t)}; skipped`)
      continue
    }
    const decoded = decodeRecord()(json)
    if (Either.isLeft(decoded)) {
      return Either.left(new LogError({ reason: "Corrupt", message: `${file} is corrupt at line ${i + 1}: ${json === undefined ? "not JSON" : decoded.left.message.slice(0, 500)}` }))
    }
    records.push(decoded.right)
  }
  return Either.right({ header: header.right, records, warnings })
}

/** The title a prompt gives a session: its first non-empty line, shortened. */
export const titleOf = (blocks: ReadonlyArray<{ readonly _tag: string; readonly text?: string }>): string => {
  const text = blocks.map((b) => (b._tag === "Text" ? b.text ?? "" : "")).join("\n")
  const line = text.split("\n").map((l) => l.trim()).find((l) => l !== "") ?? "(untitled)"
  return line.length > 80 ? `${line.slice(0, 79)}…` : line
}
