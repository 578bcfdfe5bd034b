/** Session ids: `dsh-` and a version 4 UUID, from the kernel's random bytes. */
import { describe, expect, it } from "@effect/vitest"
import * as SessionId from "../../src/Bridge/SessionId.js"
import { isValidId } from "../../src/Bridge/SessionStore.js"

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe("SessionId", () => {
  it("is dsh- and a version 4 UUID, a valid log name", () => {
    const id = SessionId.make()
    expect(id.slice(0, 4)).toBe("dsh-")
    expect(id.slice(4)).toMatch(UUID_V4)
    expect(isValidId(id)).toBe(true)
  })

  it("never repeats, and its random bits vary", () => {
    const ids = Array.from({ length: 5000 }, SessionId.make)
    expect(new Set(ids).size).toBe(ids.length)
    // Every hex position but the fixed version digit takes more than one value across the ids.
    for (let i = 4; i < ids[0]!.length; i++) {
      const seen = new Set(ids.map((id) => id[i]))
      if (i === 4 + 14 || "-".includes(ids[0]![i]!)) expect(seen.size).toBe(1)
      else expect(seen.size).toBeGreaterThan(1)
    }
  })

  it("sets the version and variant bits whatever the bytes", () => {
    expect(SessionId.uuidFromBytes(new Uint8Array(16))).toBe("00000000-0000-4000-8000-000000000000")
    expect(SessionId.uuidFromBytes(new Uint8Array(16).fill(0xff))).toBe("ffffffff-ffff-4fff-bfff-ffffffffffff")
    const bytes = Uint8Array.from({ length: 16 }, (_, i) => i)
    expect(SessionId.uuidFromBytes(bytes)).toBe("00010203-0405-4607-8809-0a0b0c0d0e0f")
    expect(bytes[6]).toBe(6) // the caller's bytes are not changed
    expect(() => SessionId.uuidFromBytes(new Uint8Array(15))).toThrow(RangeError)
  })
})
