/** The byte face of the display budget (a v2 terminal's): cut anywhere, every byte shown at most once. */
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { DisplayBudget, skippedNote } from "../../src/Bridge/DisplayBudget.js"

describe("DisplayBudget (bytes)", () => {
  it.prop(
    "shows a prefix live, then the note and a suffix, within the budget, and cuts anywhere",
    [
      FastCheck.array(FastCheck.uint8Array({ maxLength: 60 }), { maxLength: 30 }),
      FastCheck.integer({ min: 0, max: 300 }),
      FastCheck.integer({ min: 0, max: 100 })
    ],
    ([chunks, budget, tailWanted]) => {
      const tail = Math.min(budget, tailWanted)
      const b = new DisplayBudget(budget, tail)
      const all = Buffer.concat(chunks)
      const live = Buffer.concat(chunks.map((c) => b.push(c)))
      const { skipped, tail: kept } = b.finish()
      expect(all.subarray(0, live.length).equals(live)).toBe(true)
      // Byte-exact: the head and the tail are what the command wrote; the skipped middle is counted.
      expect(all.subarray(all.length - kept.length).equals(Buffer.from(kept))).toBe(true)
      expect(live.length + skipped + kept.length).toBe(all.length)
      if (all.length <= budget) {
        expect(skipped).toBe(0)
        return
      }
      // With bytes nothing is held back for a character boundary: the whole budget is used.
      expect(live.length + kept.length).toBe(budget)
    },
    { fastCheck: { numRuns: 300 } }
  )

  it("ends with the note, then the tail, as bytes", () => {
    const b = new DisplayBudget(4, 2)
    b.push(Buffer.from("abcdefgh"))
    expect(Buffer.from(b.finishBytes()).toString()).toBe(skippedNote(4) + "gh")
  })
})
