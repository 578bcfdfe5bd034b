import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { byteLength, LiveOutput, skippedNote } from "../../src/Bridge/LiveOutput.js"

const drain = (live: LiveOutput, chunks: ReadonlyArray<string>, withBytes = false) => {
  const shown = chunks.map((c) => withBytes ? live.push({ data: c, bytes: Buffer.from(c, "utf8") }) : live.push(c)).join("")
  return { live: shown, end: live.finish() }
}

describe("LiveOutput", () => {
  it("passes everything through under the budget", () => {
    expect(drain(new LiveOutput(100, 10), ["abc", "", "déf\n"])).toEqual({ live: "abcdéf\n", end: "" })
  })

  it("keeps head live, skips the middle, and ends with the note and the tail", () => {
    const chunks = Array.from({ length: 50 }, (_, i) => `${String(i).padStart(3, "0")}-------\n`) // 11 bytes each
    const all = chunks.join("")
    const { end, live } = drain(new LiveOutput(200, 50), chunks)
    expect(live).toBe(all.slice(0, 150))
    expect(end).toBe(skippedNote(all.length - 200) + all.slice(-50))
  })

  it("never splits a character, at the head's end or in the tail", () => {
    for (const withBytes of [false, true]) {
      expect(drain(new LiveOutput(4, 0), ["aé€😀"], withBytes).live).toBe("aé")
      expect(drain(new LiveOutput(3, 0), ["😀"], withBytes).live).toBe("")
      // Tail of 5 bytes: "😀" (4) fits, "€😀" (7) does not; the cut lands before the emoji.
      expect(drain(new LiveOutput(5, 5), ["x€😀"], withBytes).end).toBe(skippedNote(4) + "😀")
    }
  })

  it.prop(
    "the bytes a caller passes change nothing: the same head, note and tail as from the text",
    [
      FastCheck.array(FastCheck.string({ unit: "grapheme", maxLength: 40 }), { maxLength: 40 }),
      FastCheck.integer({ min: 0, max: 300 }),
      FastCheck.integer({ min: 0, max: 100 })
    ],
    ([chunks, budget, tailWanted]) => {
      const tail = Math.min(budget, tailWanted)
      expect(drain(new LiveOutput(budget, tail), chunks, true)).toEqual(drain(new LiveOutput(budget, tail), chunks))
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "shows a prefix, then the note and a suffix, each byte at most once, within the budget",
    [
      FastCheck.array(FastCheck.string({ unit: "grapheme", maxLength: 40 }), { maxLength: 40 }),
      FastCheck.integer({ min: 0, max: 300 }),
      FastCheck.integer({ min: 0, max: 100 })
    ],
    ([chunks, budget, tailWanted]) => {
      const tail = Math.min(budget, tailWanted)
      const all = chunks.join("")
      const { end, live } = drain(new LiveOutput(budget, tail), chunks)
      expect(all.startsWith(live)).toBe(true)
      const total = byteLength(all)
      if (total <= budget) {
        expect(live + end).toBe(all)
        return
      }
      const m = /^\n\[… (\d+) bytes of output skipped …\]\n/.exec(end)
      const kept = m === null ? end : end.slice(m[0].length)
      const skipped = m === null ? 0 : Number(m[1])
      expect(all.endsWith(kept)).toBe(true)
      expect(byteLength(live) + skipped + byteLength(kept)).toBe(total)
      expect(byteLength(live) + byteLength(kept)).toBeLessThanOrEqual(budget)
    },
    { fastCheck: { numRuns: 300 } }
  )

  it("reads a chunk's text only when the card shows all of it", () => {
    const live = new LiveOutput(10, 4)
    let reads = 0
    const chunk = (text: string) => ({ bytes: Buffer.from(text, "utf8"), get data() { reads++; return text } })
    expect(live.push(chunk("abcdef"))).toBe("abcdef")
    expect(reads).toBe(1)
    // Past the head: kept as bytes (the tail) or dropped, never decoded from `data`.
    expect(live.push(chunk("ghijkl"))).toBe("")
    expect(live.push(chunk("mnopqr"))).toBe("")
    expect(reads).toBe(1)
    expect(live.finish()).toBe(skippedNote(8) + "opqr")
  })
})
