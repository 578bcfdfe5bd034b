import { describe, expect, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import * as StatusLines from "../../src/Bash/StatusLines.js"

const parseError = (text: string): string => {
  const result = StatusLines.parse(text)
  if (Either.isRight(result)) throw new Error(`expected ${JSON.stringify(text)} to be rejected`)
  return result.left.message
}

/** Texts built from lines that are status lines, near misses of them, or anything at all. */
const resultLikeText = FastCheck.array(
  FastCheck.oneof(
    FastCheck.string().map((s) => s.replaceAll("\n", "")),
    FastCheck.constantFrom(
      "[exit code: 0]", "[exit code: 255]", "[exit code: 02]", "[exit code: -1]", "[exit code: 1e1]",
      "[killed by signal: SIGTERM]", "[killed by signal: ]", "[killed by signal: sigterm]",
      "[background task bg-3 started]", "[timed out after 120s]", "[timed out after 1500ms]",
      "[timed out after 5000ms]", "[timeout clamped to 600s]", "[background jobs killed: 2]",
      "[output truncated: 12 chars omitted]", "[output truncated: 12 chars omitted, full output: /tmp/o]",
      "[output truncated: 012 chars omitted]", ""
    ),
    FastCheck.integer({ min: -5, max: 300 }).map((n) => `[exit code: ${n}]`)
  ),
  { minLength: 1, maxLength: 8 }
).map((lines) => lines.join("\n"))

describe("StatusLines", () => {
  it.prop("decode(encode(x)) equals x", [Arbitrary.make(StatusLines.ResultParts)], ([parts]) => {
    const text = StatusLines.render(parts)
    const decoded = StatusLines.parse(text)
    expect(Either.isRight(decoded)).toBe(true)
    expect(Either.getOrThrow(decoded)).toEqual(parts)
  })

  it("the generator of result-like texts produces both accepted and rejected texts", () => {
    const samples = FastCheck.sample(resultLikeText, 2000)
    const accepted = samples.filter((s) => Either.isRight(StatusLines.parse(s))).length
    expect(accepted).toBeGreaterThan(100)
    expect(accepted).toBeLessThan(samples.length)
  })

  it.prop("encode(decode(s)) equals s for every accepted s", [resultLikeText], ([text]) => {
    const decoded = StatusLines.parse(text)
    if (Either.isRight(decoded)) expect(StatusLines.render(decoded.right)).toBe(text)
  })

  it("renders the lines in the spec's order", () => {
    const text = StatusLines.render({
      output: "a\n",
      truncated: { omittedChars: 5, savedTo: "/tmp/full.log" },
      timeoutClampedMs: 600_000,
      timedOutAfterMs: 1_500,
      backgroundJobsKilled: 2,
      end: Schema.decodeSync(StatusLines.End)({ _tag: "Signaled", signal: "SIGKILL" })
    })
    expect(text).toBe([
      "a",
      "[output truncated: 5 chars omitted, full output: /tmp/full.log]",
      "[timeout clamped to 600s]",
      "[timed out after 1500ms]",
      "[background jobs killed: 2]",
      "[killed by signal: SIGKILL]"
    ].join("\n"))
  })

  it("always ends with the exit line, 0 included", () => {
    expect(StatusLines.render({ output: "", end: Schema.decodeSync(StatusLines.End)({ _tag: "Exited", code: 0 }) }))
      .toBe("[exit code: 0]")
  })

  it("rejects malformed markers with a clear parse error", () => {
    for (const bad of ["[exit code: 02]", "[exit code: -1]", "[exit code: +2]", "[exit code: 2.0]", "[exit code: 1e1]", "[exit code: 256]", "[killed by signal: ]"]) {
      expect(parseError(`out\n${bad}`)).toContain(`got ${JSON.stringify(bad)}`)
    }
    expect(parseError("just output\n")).toContain("the last line must be")
    expect(parseError("just output")).toContain("the last line must be")
    expect(parseError("")).toContain("the last line must be")
  })

  it("leaves a non-canonical optional line in the output rather than misreading it", () => {
    const parts = Either.getOrThrow(StatusLines.parse("[timed out after 5000ms]\n[exit code: 1]"))
    expect(parts.output).toBe("[timed out after 5000ms]\n")
    expect(parts.timedOutAfterMs).toBeUndefined()
  })

  it.prop("toOutputText turns any raw text into valid output that round-trips", [FastCheck.string()], ([raw]) => {
    const output = StatusLines.toOutputText(raw)
    expect(Schema.is(StatusLines.OutputText)(output)).toBe(true)
    expect(output.startsWith(raw)).toBe(true)
    const end = Schema.decodeSync(StatusLines.End)({ _tag: "Exited", code: 3 })
    expect(Either.getOrThrow(StatusLines.parse(StatusLines.render({ output, end }))).output).toBe(output)
  })

  it("keeps a status look-alike at the end of real output as output", () => {
    const output = StatusLines.toOutputText("done\n[timed out after 5s]")
    const end = Schema.decodeSync(StatusLines.End)({ _tag: "Exited", code: 0 })
    const parts = Either.getOrThrow(StatusLines.parse(StatusLines.render({ output, end })))
    expect(parts.timedOutAfterMs).toBeUndefined()
    expect(parts.output).toBe("done\n[timed out after 5s]\n\n")
  })
})
