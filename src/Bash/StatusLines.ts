/**
 * The rendered result of a bash call — output followed by status lines — as ONE bidirectional
 * Schema: `encode` renders the text the model reads, `decode` parses it back. The presenter
 * recovers the exit for the terminal card with this same Schema, so the two can never drift.
 *
 * ```
 * <output>
 * [output truncated: 1234 chars omitted, full output: /tmp/…]   (only when truncated)
 * [timeout clamped to 600s]                                      (only when clamped)
 * [timed out after 120s]                                         (only on timeout)
 * [background jobs killed: 2]                                    (only when `&` jobs were left)
 * [exit code: 2]  |  [killed by signal: SIGTERM]  |  [background task bg-1 started]
 * ```
 *
 * Numbers are digits only: `02`, `+2`, `2.0` and `1e1` are rejected so `encode(decode(s)) === s`.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Exited, ExitStatus, SignalName, Signaled } from "../Terminal/ExitStatus.js"

/** A non-negative integer written with digits only and no leading zero. */
export const Digits = Schema.transform(
  Schema.String.pipe(
    Schema.pattern(/^(0|[1-9][0-9]*)$/),
    Schema.annotations({ identifier: "Digits", message: () => "expected digits only (no sign, no leading zero)" })
  ),
  Schema.NonNegativeInt,
  { strict: true, decode: (s) => Number(s), encode: (n) => String(n) }
)

/** A duration as the status lines write it: whole seconds as `120s`, anything else as `1500ms`. */
export const DurationText = Schema.transformOrFail(
  Schema.String,
  Schema.Int.pipe(Schema.positive()),
  {
    strict: true,
    decode: (s, _, ast) => {
      const m = /^(0|[1-9][0-9]*)(s|ms)$/.exec(s)
      if (m === null) return ParseResult.fail(new ParseResult.Type(ast, s, `expected a duration like 120s or 1500ms, got "${s}"`))
      const n = Number(m[1])
      const ms = m[2] === "s" ? n * 1000 : n
      // `5000ms` would re-render as `5s`: only the canonical spelling is accepted.
      if (ms === 0 || (m[2] === "ms" && n % 1000 === 0)) {
        return ParseResult.fail(new ParseResult.Type(ast, s, `non-canonical duration "${s}"`))
      }
      return ParseResult.succeed(ms)
    },
    encode: (ms) => ParseResult.succeed(ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`)
  }
)

const NoNewline = Schema.String.pipe(Schema.pattern(/^[^\n]*$/))
const TaskId = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.-]+$/), Schema.annotations({ identifier: "TaskId" }))

/** The command was started as a background task; its own completion carries its exit line later. */
export class BackgroundStarted extends Schema.TaggedClass<BackgroundStarted>()("BackgroundStarted", {
  taskId: TaskId
}) {}

/** How the call ended, as the last status line says. */
export const End = Schema.Union(Exited, Signaled, BackgroundStarted)
export type End = typeof End.Type

export const Truncation = Schema.Struct({
  omittedChars: Schema.NonNegativeInt,
  savedTo: Schema.optionalWith(NoNewline.pipe(Schema.minLength(1)), { exact: true })
})
export type Truncation = typeof Truncation.Type

// One Schema per status line, each a template literal parser so a line decodes and encodes by the
// same definition.
// `decode` returns the encoded side of `to`, which then validates it (a class constructor would
// throw instead of failing the parse).
const line = <A, T, I extends ReadonlyArray<unknown>, E extends string>(
  parser: Schema.Schema<I, E>,
  to: Schema.Schema<A, T>,
  decode: (parts: I) => T,
  encode: (value: T) => I
): Schema.Schema<A, string> =>
  Schema.compose(
    Schema.String,
    Schema.transform(parser, to, {
      strict: false,
      decode: (i) => decode(i as I),
      encode: (t) => encode(t as T)
    }),
    { strict: false }
  )

// The line Schemas are built on first use: seven template literal parsers cost ~2 ms of every
// start, and the agent's start renders and parses nothing.
const buildLines = () => {
  const ExitLine = line(
    Schema.TemplateLiteralParser("[exit code: ", Digits, "]"),
    Exited,
    ([, code]) => ({ _tag: "Exited" as const, code }),
    (e) => ["[exit code: ", e.code, "]"] as const
  )
  const SignalLine = line(
    Schema.TemplateLiteralParser("[killed by signal: ", SignalName, "]"),
    Signaled,
    ([, signal]) => ({ _tag: "Signaled" as const, signal }),
    (s) => ["[killed by signal: ", s.signal, "]"] as const
  )
  const BackgroundLine = line(
    Schema.TemplateLiteralParser("[background task ", TaskId, " started]"),
    BackgroundStarted,
    ([, taskId]) => ({ _tag: "BackgroundStarted" as const, taskId }),
    (b) => ["[background task ", b.taskId, " started]"] as const
  )
  const EndLine = Schema.Union(ExitLine, SignalLine, BackgroundLine)

  const TruncatedLine = Schema.Union(
    line(
      Schema.TemplateLiteralParser("[output truncated: ", Digits, " chars omitted, full output: ", NoNewline, "]"),
      Truncation,
      ([, omittedChars, , savedTo]) => ({ omittedChars, savedTo }),
      (t) => ["[output truncated: ", t.omittedChars, " chars omitted, full output: ", t.savedTo ?? "", "]"] as const
    ).pipe(Schema.filter((t) => t.savedTo !== undefined)),
    line(
      Schema.TemplateLiteralParser("[output truncated: ", Digits, " chars omitted]"),
      Truncation,
      ([, omittedChars]) => ({ omittedChars }),
      (t) => ["[output truncated: ", t.omittedChars, " chars omitted]"] as const
    ).pipe(Schema.filter((t) => t.savedTo === undefined))
  )
  const ClampedLine = line(
    Schema.TemplateLiteralParser("[timeout clamped to ", DurationText, "]"),
    Schema.Number,
    ([, ms]) => ms,
    (ms) => ["[timeout clamped to ", ms, "]"] as const
  )
  const TimedOutLine = line(
    Schema.TemplateLiteralParser("[timed out after ", DurationText, "]"),
    Schema.Number,
    ([, ms]) => ms,
    (ms) => ["[timed out after ", ms, "]"] as const
  )
  const JobsKilledLine = line(
    Schema.TemplateLiteralParser("[background jobs killed: ", Digits, "]"),
    Schema.Number,
    ([, n]) => n,
    (n) => ["[background jobs killed: ", n, "]"] as const
  )

  /** The optional lines between output and end, in rendering order. */
  const optionalLines = [
    ["truncated", TruncatedLine],
    ["timeoutClampedMs", ClampedLine],
    ["timedOutAfterMs", TimedOutLine],
    ["backgroundJobsKilled", JobsKilledLine]
  ] as const
  return { EndLine, optionalLines }
}
let builtLines: ReturnType<typeof buildLines> | undefined
const lines = () => builtLines ??= buildLines()

const decodesAs = (schema: Schema.Schema<any, string>, text: string) =>
  Either.isRight(Schema.decodeUnknownEither(schema)(text))

/** Is this line something the parser would take for an optional status line? */
export const isStatusLike = (text: string): boolean => lines().optionalLines.some(([, schema]) => decodesAs(schema, text))

const lastLine = (output: string): string => {
  const body = output.slice(0, -1)
  return body.slice(body.lastIndexOf("\n") + 1)
}

/**
 * The output part of a result: empty, or whole lines each ending in `\n`, whose last line does not
 * look like a status line (otherwise parsing would take it for one). {@link toOutputText} makes any
 * raw text into one.
 */
export const OutputText = Schema.String.pipe(
  Schema.filter((s) =>
    s === "" || (s.endsWith("\n") && !isStatusLike(lastLine(s))) ||
    "expected empty output, or lines ending in a newline whose last line is not a status line"
  ),
  Schema.annotations({
    identifier: "OutputText",
    arbitrary: () => (fc) =>
      fc.array(
        fc.oneof(
          fc.string().map((s) => s.replaceAll("\n", "")),
          fc.constantFrom("", "[exit code: 0]", "[timed out after 5s]", "[background jobs killed: 1]", "```", "\r")
        ),
        { maxLength: 8 }
      ).map((lines) => lines.map((l) => `${l}\n`).join(""))
  })
)

/** Makes raw text into {@link OutputText}: a final newline, and a blank line after a status look-alike. */
export const toOutputText = (raw: string): string => {
  if (raw === "") return raw
  const withNewline = raw.endsWith("\n") ? raw : `${raw}\n`
  return isStatusLike(lastLine(withNewline)) ? `${withNewline}\n` : withNewline
}

/** The structure of a rendered result. */
export const ResultParts = Schema.Struct({
  output: OutputText,
  truncated: Schema.optionalWith(Truncation, { exact: true }),
  timeoutClampedMs: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  timedOutAfterMs: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  backgroundJobsKilled: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  end: End
})
export type ResultParts = typeof ResultParts.Type

/** The result text ⇄ its structure. `encode` renders; `decode` parses with a clear error. */
export const RenderedResult = Schema.transformOrFail(Schema.String, ResultParts, {
  strict: true,
  decode: (text, _, ast) => {
    const { EndLine, optionalLines } = lines()
    const textLines = text.split("\n")
    const last = textLines.pop()!
    const end = Schema.decodeEither(EndLine)(last)
    if (Either.isLeft(end)) {
      return ParseResult.fail(new ParseResult.Type(
        ast,
        text,
        `the last line must be "[exit code: N]", "[killed by signal: SIGNAME]" or "[background task ID started]", got ${JSON.stringify(last)}`
      ))
    }
    const parts: Record<string, unknown> = { end: end.right }
    // Optional lines sit in a fixed order just above the end line: peel them off from the bottom.
    for (let i = optionalLines.length - 1; i >= 0 && textLines.length > 0; i--) {
      const [key, schema] = optionalLines[i]!
      const decoded = Schema.decodeEither(schema as Schema.Schema<unknown, string>)(textLines[textLines.length - 1]!)
      if (Either.isRight(decoded)) {
        parts[key] = decoded.right
        textLines.pop()
      }
    }
    parts.output = textLines.length === 0 ? "" : `${textLines.join("\n")}\n`
    return ParseResult.succeed(parts as ResultParts)
  },
  encode: (parts) => {
    const { EndLine, optionalLines } = lines()
    const statusLines: Array<string> = []
    for (const [key, schema] of optionalLines) {
      const value = parts[key]
      if (value !== undefined) statusLines.push(Schema.encodeSync(schema as Schema.Schema<unknown, string>)(value))
    }
    statusLines.push(Schema.encodeSync(EndLine)(parts.end))
    return ParseResult.succeed(parts.output + statusLines.join("\n"))
  }
}).annotations({ identifier: "RenderedResult" })

// `render` and `parse` compile their parsers on first use, not at start.
let renderSync: ((parts: ResultParts) => string) | undefined
let parseEither: ReturnType<typeof makeParse> | undefined
const makeParse = () => Schema.decodeEither(RenderedResult)

/** Renders a result to the text the model reads. */
export const render = (parts: ResultParts): string => (renderSync ??= Schema.encodeSync(RenderedResult))(parts)

/** Parses a rendered result; fails with a ParseError that says what is wrong. */
export const parse: ReturnType<typeof makeParse> = (text, options) => (parseEither ??= makeParse())(text, options)

export { ExitStatus }
