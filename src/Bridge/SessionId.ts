/**
 * Session ids: `dsh-` and a random (version 4) UUID. The 16 random bytes are read from
 * `/dev/urandom`, the kernel's CSPRNG that `crypto.randomUUID` draws from too, rather than through
 * `node:crypto`: loading that module costs ~9 ms, and `session/new` was its only user before the
 * first command, so every new thread in Zed (which sends `session/new` right after `initialize`)
 * paid it. Where `/dev/urandom` cannot be read, `crypto.randomUUID` as before.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"

const hex = (bytes: Uint8Array, from: number, to: number): string => Buffer.from(bytes.subarray(from, to)).toString("hex")

/** The UUID of 16 random bytes: the version (4) and variant (10xx) bits set as RFC 9562 says. */
export const uuidFromBytes = (random: Uint8Array): string => {
  if (random.length !== 16) throw new RangeError(`a UUID takes 16 bytes, not ${random.length}`)
  const b = Uint8Array.from(random)
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  return `${hex(b, 0, 4)}-${hex(b, 4, 6)}-${hex(b, 6, 8)}-${hex(b, 8, 10)}-${hex(b, 10, 16)}`
}

/** 16 bytes from the kernel, or undefined where there is no readable `/dev/urandom`. */
const urandom16 = (): Uint8Array | undefined => {
  let fd: number | undefined
  try {
    fd = fs.openSync("/dev/urandom", "r")
    const bytes = new Uint8Array(16)
    return fs.readSync(fd, bytes, 0, 16, null) === 16 ? bytes : undefined
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** A fresh session id: `dsh-<uuid v4>`. */
export const make = (): string => {
  const bytes = urandom16()
  return `dsh-${bytes === undefined ? randomUUID() : uuidFromBytes(bytes)}`
}
