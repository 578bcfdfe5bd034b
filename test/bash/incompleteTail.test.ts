/** `Execute.incompleteTail` holds back exactly what a UTF-8 decoder holds back at a read's end. */
import { StringDecoder } from "node:string_decoder"
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { incompleteTail } from "../../src/Bash/Execute.js"

describe("incompleteTail", () => {
  it.prop(
    "a prefix of valid UTF-8 decodes, as a StringDecoder does, to its bytes without the incomplete tail",
    [FastCheck.string({ unit: "grapheme", maxLength: 30 }), FastCheck.nat()],
    ([text, at]) => {
      const bytes = Buffer.from(text, "utf8")
      const prefix = bytes.subarray(0, bytes.length === 0 ? 0 : at % (bytes.length + 1))
      const decoded = new StringDecoder("utf8").write(prefix)
      expect(prefix.subarray(0, prefix.length - incompleteTail(prefix)).toString("utf8")).toBe(decoded)
    },
    { fastCheck: { numRuns: 500 } }
  )

  it("complete, split and invalid endings", () => {
    expect(incompleteTail(Buffer.from("a€"))).toBe(0)
    expect(incompleteTail(Buffer.from([0x61, 0xe2, 0x82]))).toBe(2)
    expect(incompleteTail(Buffer.from([0xf0, 0x9f, 0x98]))).toBe(3)
    expect(incompleteTail(Buffer.from([0xc3]))).toBe(1)
    expect(incompleteTail(Buffer.from([0xff]))).toBe(0)
    expect(incompleteTail(new Uint8Array(0))).toBe(0)
  })
})
