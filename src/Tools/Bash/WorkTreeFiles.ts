/**
 * Reading files of a work tree for the changed-files display, safely and within bounds.
 *
 * - Paths are `Buffer`s (root bytes + `/` + the raw bytes git printed), so a name that is not
 *   UTF-8 is opened as it is on disk.
 * - A symlink is never followed: its content is its target, as git stores it (a blob holding the
 *   target), so a link into `/etc` shows `/etc/passwd`, never the password file. The final
 *   component is opened with `O_NOFOLLOW`, and a parent directory that resolves outside the
 *   repository (a directory swapped for a link after `git status` looked) is refused.
 * - `O_NONBLOCK` and an `fstat` check: a FIFO or a device is never read (or waited on).
 * - At most `limit` bytes are read; a larger file is `TooLarge`.
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"

/** What a path held at one moment. */
export type Content =
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Bytes"; readonly bytes: Buffer }
  | { readonly _tag: "TooLarge"; readonly size: number }
  | { readonly _tag: "Skipped"; readonly reason: string }

export const absent: Content = { _tag: "Absent" }
export const bytes = (b: Buffer): Content => ({ _tag: "Bytes", bytes: b })
export const tooLarge = (size: number): Content => ({ _tag: "TooLarge", size })
export const skipped = (reason: string): Content => ({ _tag: "Skipped", reason })

/** What `lstat` says, at full precision: a change of any field means the file was touched. */
export interface Stat {
  readonly size: number
  readonly mtimeNs: bigint
  readonly ctimeNs: bigint
  readonly ino: bigint
  readonly mode: number
  readonly isFile: boolean
  readonly isSymlink: boolean
}

export const sameStat = (a: Stat | undefined, b: Stat | undefined): boolean =>
  a === undefined || b === undefined
    ? a === b
    : a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.ino === b.ino && a.mode === b.mode

const SLASH = Buffer.from("/")

/** `root/rel` as bytes. */
export const join = (root: string, rel: Buffer): Buffer => Buffer.concat([Buffer.from(root), SLASH, rel])

/** `lstat`; undefined when nothing is there (or it cannot be looked at). */
export const lstat = (file: Buffer): Effect.Effect<Stat | undefined> =>
  Effect.sync(() => {
    try {
      const s = fs.lstatSync(file, { bigint: true, throwIfNoEntry: false })
      if (s === undefined) return undefined
      return {
        size: Number(s.size),
        mtimeNs: s.mtimeNs,
        ctimeNs: s.ctimeNs,
        ino: s.ino,
        mode: Number(s.mode),
        isFile: s.isFile(),
        isSymlink: s.isSymbolicLink()
      }
    } catch {
      return undefined
    }
  })

/** Resolves the root once per snapshot: the containment check compares real paths. */
export const realRoot = (root: string): Effect.Effect<Buffer> =>
  Effect.sync(() => {
    try {
      return fs.realpathSync(root, { encoding: "buffer" })
    } catch {
      return Buffer.from(root)
    }
  })

const insideRoot = (rootReal: Buffer, rel: Buffer, root: string): boolean => {
  const slash = rel.lastIndexOf(0x2f)
  // Directly under the root: nothing between to be a link.
  if (slash === -1) return true
  try {
    const real = fs.realpathSync(join(root, rel.subarray(0, slash)), { encoding: "buffer" })
    return real.equals(rootReal) ||
      (real.length > rootReal.length && real[rootReal.length] === 0x2f && real.subarray(0, rootReal.length).equals(rootReal))
  } catch {
    return false
  }
}

const readNoFollow = (file: Buffer, limit: number): Content => {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
  try {
    const stat = fs.fstatSync(fd)
    if (!stat.isFile()) return skipped("not a regular file")
    if (stat.size > limit) return tooLarge(stat.size)
    // One byte past the limit tells a file that grew since the fstat.
    const buffer = Buffer.alloc(Math.min(stat.size, limit) + 1)
    let length = 0
    for (;;) {
      const n = fs.readSync(fd, buffer, length, buffer.length - length, length)
      if (n === 0) break
      length += n
      if (length === buffer.length) break
    }
    if (length > limit) return tooLarge(length)
    return bytes(buffer.subarray(0, length))
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * The content of `root/rel` now, given its `lstat` (undefined = absent). A symlink yields its
 * target; anything else that is not a regular file is skipped.
 *
 * Synchronous on purpose: these are small local files (at most `limit` bytes each, and a bounded
 * number of them); a thread-pool round trip per `open`/`stat`/`read`/`close` cost more than the
 * reads themselves, and Effect's scheduler still yields between files of a long list.
 */
export const read = (
  root: string,
  rootReal: Buffer,
  rel: Buffer,
  stat: Stat | undefined,
  limit: number
): Effect.Effect<Content> =>
  Effect.sync(() => {
    // A directory where git had a file: the file is gone (git lists what is inside separately).
    if (stat === undefined || (stat.mode & fs.constants.S_IFMT) === fs.constants.S_IFDIR) return absent
    if (!stat.isFile && !stat.isSymlink) return skipped("not a regular file")
    if (stat.size > limit) return tooLarge(stat.size)
    if (!insideRoot(rootReal, rel, root)) return skipped("outside the repository")
    const file = join(root, rel)
    try {
      return stat.isSymlink ? bytes(fs.readlinkSync(file, { encoding: "buffer" })) : readNoFollow(file, limit)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      return code === "ENOENT" ? absent : code === "ELOOP" ? skipped("a symlink (not followed)") : skipped(`unreadable (${code ?? "error"})`)
    }
  })
