/**
 * Session ids: `dsh-` and a random (version 4) UUID, of 16 bytes from the kernel's CSPRNG
 * (Platform/Random: read from `/dev/urandom` rather than through `node:crypto`, whose loading
 * `session/new` would otherwise pay at every new thread in Zed).
 */
import { randomBytes } from "../Platform/Random.js"

const hex = (bytes: Uint8Array, from: number, to: number): string => Buffer.from(bytes.subarray(from, to)).toString("hex")

/** The UUID of 16 random bytes: the version (4) and variant (10xx) bits set as RFC 9562 says. */
export const uuidFromBytes = (random: Uint8Array): string => {
  if (random.length !== 16) throw new RangeError(`a UUID takes 16 bytes, not ${random.length}`)
  const b = Uint8Array.from(random)
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  return `${hex(b, 0, 4)}-${hex(b, 4, 6)}-${hex(b, 6, 8)}-${hex(b, 8, 10)}-${hex(b, 10, 16)}`
}

/** A fresh session id: `dsh-<uuid v4>`. */
export const make = (): string => `dsh-${uuidFromBytes(randomBytes(16))}`
