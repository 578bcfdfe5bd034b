/**
 * The executor hands out whole-character chunks and decodes them only when read: each chunk's text
 * is exactly what a streaming decoder gives for the reads, and a merged event's text is the join.
 */
import { StringDecoder } from "node:string_decoder"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as FastCheck from "effect/FastCheck"
import type { RunEvent } from "../../src/Bash/Bash.js"
import { ModelText } from "../../src/Bash/ModelText.js"
import { decodeUtf8, mergeOutputs, outputOf, wholeCharacters } from "../../src/Bash/OutputEvents.js"

/** Bytes around UTF-8's edges: ASCII, continuation bytes, every kind of lead byte, bytes never valid. */
const byte = FastCheck.constantFrom(0x61, 0x0a, 0x1b, 0x80, 0x8f, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xf8, 0xff)
const reads = FastCheck.array(FastCheck.array(byte, { maxLength: 8 }).map((b) => Buffer.from(b)), { maxLength: 8 })

/** The reads as the executor reports them: whole-character chunks (each a pipe read, or the end). */
const chunksOf = (rs: ReadonlyArray<Uint8Array>): Array<Uint8Array> => {
  const whole = wholeCharacters()
  const out: Array<Uint8Array> = []
  for (const r of rs) {
    const c = whole.push(r)
    if (c !== undefined) out.push(c)
  }
  const rest = whole.end()
  if (rest !== undefined) out.push(rest)
  return out
}

describe("output events", () => {
  it.prop(
    "each chunk decodes on its own to what a StringDecoder gives for the same reads, and together they are every byte",
    [reads],
    ([rs]) => {
      const decoder = new StringDecoder("utf8")
      const expected = [...rs.map((r) => decoder.write(r)), decoder.end()].filter((t) => t !== "")
      const chunks = chunksOf(rs)
      expect(chunks.map(decodeUtf8)).toEqual(expected)
      expect(Buffer.concat(chunks)).toEqual(Buffer.concat(rs))
    },
    { fastCheck: { numRuns: 3000 } }
  )

  it.prop(
    "a merged event's bytes are its chunks' bytes, and its text their texts joined",
    [reads],
    ([rs]) => {
      const chunks = chunksOf(rs)
      const merged = mergeOutputs(Chunk.unsafeFromArray<RunEvent>(chunks.map(outputOf)))
      const outputs = Chunk.toReadonlyArray(merged).filter((e) => e._tag === "Output")
      expect(outputs.map((e) => e.data).join("")).toBe(chunks.map(decodeUtf8).join(""))
      expect(Buffer.concat(outputs.map((e) => e.bytes!))).toEqual(Buffer.concat(chunks))
    },
    { fastCheck: { numRuns: 1000 } }
  )

  it("an event's text is decoded when first read, not before", () => {
    const bytes = Buffer.from("héllo")
    const event = outputOf(bytes)
    bytes[0] = 0x4a
    expect(event.data).toBe("Jéllo")
    bytes[0] = 0x68
    expect(event.data).toBe("Jéllo")
  })
})

describe("the model text of bytes", () => {
  /** Output shaped like what reaches the model: ASCII runs, newlines, `\r` rewrites, escapes, control and multi-byte characters. */
  // Mostly plain ASCII lines (what the bytes path takes), the rest now and then.
  const piece = FastCheck.oneof(
    { arbitrary: FastCheck.tuple(FastCheck.constantFrom("a", "b", "c"), FastCheck.integer({ min: 1, max: 60 })).map(([c, n]) => c.repeat(n)), weight: 12 },
    { arbitrary: FastCheck.constantFrom("\n", "\n\n"), weight: 4 },
    { arbitrary: FastCheck.constantFrom("\r", "\r\n", "\x1b[31m", "\x1b[", "0m", "\x01", "\x7f", "é", "€", "😀", "\t"), weight: 1 }
  )
  const output = FastCheck.array(piece, { maxLength: 150, size: "large" }).map((ps) => Buffer.from(ps.join(""), "utf8"))
  const cuts = FastCheck.array(FastCheck.nat({ max: 2000 }), { maxLength: 40, size: "large" })

  it.prop(
    "pushing whole-character chunks as bytes gives the same text and the same count as pushing their text",
    [output, cuts, FastCheck.integer({ min: 100, max: 260 }), FastCheck.integer({ min: 4, max: 80 })],
    ([all, at, maxChars, maxLine]) => {
      const reads: Array<Uint8Array> = []
      let prev = 0
      for (const c of [...new Set(at.map((x) => x % (all.length + 1)))].sort((a, b) => a - b)) {
        reads.push(all.subarray(prev, c))
        prev = c
      }
      reads.push(all.subarray(prev))
      const chunks = chunksOf(reads)
      const asBytes = new ModelText(maxChars, maxLine)
      const asText = new ModelText(maxChars, maxLine)
      for (const c of chunks) {
        asBytes.pushBytes(c)
        asText.push(decodeUtf8(c))
      }
      ;(globalThis as any).RUNS = ((globalThis as any).RUNS ?? 0) + 1
      ;(globalThis as any).TRUNC = ((globalThis as any).TRUNC ?? 0) + (asText.finish().omittedChars > 0 ? 1 : 0)
      expect(asBytes.finish()).toEqual(asText.finish())
      if ((globalThis as any).RUNS % 1000 === 0) console.log("HITS", (globalThis as any).HITS, "RUNS", (globalThis as any).RUNS, "TRUNC", (globalThis as any).TRUNC, all.length)
    },
    { fastCheck: { numRuns: 3000 } }
  )
})
