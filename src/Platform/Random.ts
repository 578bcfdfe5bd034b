/**
 * Random bytes from `/dev/urandom`, the kernel's CSPRNG that `node:crypto` draws from too, read
 * directly: loading `node:crypto`'s random functions costs ~9 ms, paid by whichever call needs the
 * first random name (a session id, a call's temp files). Where `/dev/urandom` cannot be read,
 * `crypto.randomBytes`.
 */
import { randomBytes as cryptoRandomBytes } from "node:crypto"
import * as fs from "node:fs"

/** `n` random bytes. */
export const randomBytes = (n: number): Uint8Array => {
  let fd: number | undefined
  try {
    fd = fs.openSync("/dev/urandom", "r")
    const bytes = new Uint8Array(n)
    let read = 0
    while (read < n) {
      const got = fs.readSync(fd, bytes, read, n - read, null)
      if (got === 0) throw new Error("short read")
      read += got
    }
    return bytes
  } catch {
    return cryptoRandomBytes(n)
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** `n` random bytes as hex. */
export const randomHex = (n: number): string => Buffer.from(randomBytes(n)).toString("hex")
