/**
 * `git status --porcelain=v2 -z` parsed from raw bytes.
 *
 * With `-z` a path is written verbatim (no quoting) and ends at a NUL, so a name with spaces, a
 * newline or bytes that are not UTF-8 comes through intact — as long as we never decode it. Paths
 * stay `Buffer`s here; `key` is the same bytes as a latin1 string (one char per byte, so lossless,
 * and ordering keys as strings orders them bytewise), usable as a Map key.
 */

export type EntryKind = "tracked" | "unmerged" | "untracked" | "ignored"

export interface StatusEntry {
  readonly kind: EntryKind
  /** Path relative to the work tree's root, raw bytes. */
  readonly path: Buffer
  /** `path` as a lossless latin1 string: a Map key. */
  readonly key: string
  /** The XY status pair; `??` untracked, `!!` ignored. */
  readonly xy: string
  /** The blob in HEAD for a tracked entry; undefined when the path is not in HEAD. */
  readonly headOid: string | undefined
  /** A submodule (a gitlink): not a file we can show. */
  readonly submodule: boolean
}

/** The arguments for the status this module parses (run at the work tree's root). */
export const statusArgs: ReadonlyArray<string> = [
  "-c",
  "core.quotepath=off",
  // Never start an fsmonitor daemon on the user's behalf, and without the index write (see
  // GIT_OPTIONAL_LOCKS in Git.ts) its token would not be kept anyway.
  "-c",
  "core.fsmonitor=false",
  "status",
  "--porcelain=v2",
  "-z",
  "--untracked-files=all",
  // A rename shows as a deletion and a creation: simpler, and skips rename detection's cost.
  "--no-renames",
  // A submodule's change is not a file diff, and recursing into submodules costs a git per submodule.
  "--ignore-submodules=all"
]

const SPACE = 0x20
const NUL = 0

const isZeroOid = (oid: string): boolean => /^0+$/.test(oid)

/** Index just after the `n`-th space at or after `from` (the start of field n+1), or -1. */
const afterSpaces = (buf: Buffer, from: number, end: number, n: number): number => {
  let i = from
  for (let seen = 0; seen < n; seen++) {
    const at = buf.indexOf(SPACE, i)
    if (at === -1 || at >= end) return -1
    i = at + 1
  }
  return i
}

const entry = (kind: EntryKind, path: Buffer, xy: string, headOid: string | undefined, submodule: boolean): StatusEntry => ({
  kind,
  path,
  key: path.toString("latin1"),
  xy,
  headOid,
  submodule
})

/**
 * Parses the whole output. Unknown record types (headers `#`, a future type) are skipped; a
 * malformed record is skipped rather than failing the whole snapshot (the display is best effort).
 */
export const parse = (out: Buffer): Array<StatusEntry> => {
  const entries: Array<StatusEntry> = []
  let i = 0
  while (i < out.length) {
    let end = out.indexOf(NUL, i)
    if (end === -1) end = out.length
    const type = out[i]
    if (type === 0x31 /* 1 */ || type === 0x32 /* 2 */ || type === 0x75 /* u */) {
      // 1 XY sub mH mI mW hH hI <path>
      // 2 XY sub mH mI mW hH hI Xscore <path> NUL <origPath>
      // u XY sub m1 m2 m3 mW h1 h2 h3 <path>
      const n = type === 0x31 ? 8 : type === 0x32 ? 9 : 10
      const pathAt = afterSpaces(out, i, end, n)
      if (pathAt !== -1) {
        const f = out.toString("latin1", i, pathAt - 1).split(" ")
        const xy = f[1] ?? ".."
        const submodule = (f[2] ?? "N").startsWith("S")
        // `u`: h1 is the merge base, h2 (stage 2, ours) the file as in HEAD.
        const headOid = type === 0x75 ? f[8] : f[6]
        entries.push(
          entry(
            type === 0x75 ? "unmerged" : "tracked",
            Buffer.from(out.subarray(pathAt, end)),
            xy,
            headOid === undefined || isZeroOid(headOid) ? undefined : headOid,
            submodule
          )
        )
      }
      if (type === 0x32) {
        // The original path of a rename or copy is its own NUL-terminated field.
        const next = out.indexOf(NUL, end + 1)
        end = next === -1 ? out.length : next
      }
    } else if ((type === 0x3f /* ? */ || type === 0x21) /* ! */ && out[i + 1] === SPACE) {
      const path = Buffer.from(out.subarray(i + 2, end))
      entries.push(type === 0x3f ? entry("untracked", path, "??", undefined, false) : entry("ignored", path, "!!", undefined, false))
    }
    i = end + 1
  }
  return entries
}
