import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Ndjson from "../../src/Bridge/Ndjson.js"

const enc = (s: string) => new TextEncoder().encode(s)

describe("Ndjson framing", () => {
  it("splits on newlines across chunk boundaries, drops blank lines and a trailing CR", () => {
    const s = new Ndjson.LineSplitter(1024)
    const frames = [...s.push(enc("{\"a\":1}\n{\"b\"")), ...s.push(enc(":2}\r\n\n  \n{\"c\":3}")), ...s.end()]
    expect(frames).toEqual([
      { _tag: "Line", line: "{\"a\":1}" },
      { _tag: "Line", line: "{\"b\":2}" },
      { _tag: "Line", line: "{\"c\":3}" }
    ])
  })

  it("keeps a multi-byte character split between chunks intact", () => {
    const bytes = enc("\"☃é\"\n")
    const s = new Ndjson.LineSplitter()
    const frames = [...s.push(bytes.subarray(0, 2)), ...s.push(bytes.subarray(2, 4)), ...s.push(bytes.subarray(4))]
    expect(frames).toEqual([{ _tag: "Line", line: "\"☃é\"" }])
  })

  it("reports invalid UTF-8 instead of altering the text", () => {
    const s = new Ndjson.LineSplitter()
    expect(s.push(new Uint8Array([0x22, 0xff, 0x22, 0x0a, 0x31, 0x0a]))).toEqual([
      { _tag: "Undecodable" },
      { _tag: "Line", line: "1" }
    ])
  })

  it("an overlong line is reported once, as soon as it crosses the cap, and never buffered", () => {
    const s = new Ndjson.LineSplitter(1000)
    const mib = new Uint8Array(1024 * 1024).fill(0x78)
    const first = s.push(mib)
    expect(first).toEqual([{ _tag: "Overlong", maxLineBytes: 1000 }])
    for (let i = 0; i < 20; i++) {
      expect(s.push(mib)).toEqual([])
      expect(s.bufferedBytes).toBe(0)
    }
    expect(s.push(enc("tail\n{\"ok\":true}\n"))).toEqual([{ _tag: "Line", line: "{\"ok\":true}" }])
  })

  it("a line of exactly the cap is accepted; one byte more is not", () => {
    const s = new Ndjson.LineSplitter(10)
    expect(s.push(enc("0123456789\n01234567890\nx\n"))).toEqual([
      { _tag: "Line", line: "0123456789" },
      { _tag: "Overlong", maxLineBytes: 10 },
      { _tag: "Line", line: "x" }
    ])
    // The same when the line arrives one byte at a time.
    const t = new Ndjson.LineSplitter(10)
    const out = [...enc("0123456789\n01234567890\nx")].flatMap((b) => t.push(new Uint8Array([b])))
    expect([...out, ...t.end()]).toEqual([
      { _tag: "Line", line: "0123456789" },
      { _tag: "Overlong", maxLineBytes: 10 },
      { _tag: "Line", line: "x" }
    ])
  })

  it("an overlong last line without a newline yields nothing more at the end", () => {
    const s = new Ndjson.LineSplitter(4)
    expect(s.push(enc("123456"))).toEqual([{ _tag: "Overlong", maxLineBytes: 4 }])
    expect(s.end()).toEqual([])
  })

  it.effect("frames() works on a Stream of strings and bytes", () =>
    Effect.gen(function*() {
      const out = yield* Stream.make("a\nb", enc("c\n"), "d").pipe(Ndjson.frames(), Stream.runCollect)
      expect(Chunk.toReadonlyArray(out)).toEqual([
        { _tag: "Line", line: "a" },
        { _tag: "Line", line: "bc" },
        { _tag: "Line", line: "d" }
      ])
    }))
})
