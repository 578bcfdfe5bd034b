/**
 * Which files a command created, modified or deleted, with their old and new text: a git status
 * snapshot before the command, another after, compared. Provider-neutral (no ACP types): the
 * presentation turns a {@link FileChanges} into diff content and locations.
 *
 * Why it works from `git status`: it is the cheapest complete answer git has to "what differs from
 * the index, plus what is untracked", honouring `.gitignore`. A file clean before the command is
 * not listed before; if it is listed after, the command changed it, and its old text is the blob
 * git names for it in HEAD (which the index matched, since it was clean). A file already dirty or
 * untracked before is listed both times; its `lstat` (size, mtime, ctime, inode, mode, at full
 * precision) and a bounded copy of its content are taken at the snapshot, so a later change is
 * seen and its old text is this copy, not the index: the diff shows this command's change only.
 *
 * Limits, on purpose:
 * - A command that changes a file and then commits it (or moves HEAD) leaves nothing to compare
 *   for that file: it is clean before and after.
 * - Whatever else changed the work tree meanwhile (an editor save) is attributed to the command;
 *   this is a display, not an audit.
 * - A non-UTF-8 file name is read and compared by its bytes, but the absolute `path` string it
 *   yields decodes them as UTF-8 (lossy: U+FFFD), which is all a JSON string can carry.
 * - A change that leaves the content identical (`touch`, `chmod`) is not shown.
 * - Binary means a NUL byte; other text that is not UTF-8 is decoded lossily (U+FFFD).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { findWorkTree, type Git, type GitError, live, readBlobs } from "./Git.js"
import { neutralisedFilters } from "./GitFilters.js"
import { parse, statusArgs, type StatusEntry } from "./GitStatus.js"
import * as Files from "./WorkTreeFiles.js"

export interface Limits {
  /** Files shown per call; the rest are counted in `omitted`. */
  readonly maxFiles: number
  /** A file (old or new) larger than this gets a note, not a diff. */
  readonly maxFileBytes: number
  /** Total bytes of pre-command copies per snapshot; beyond it a dirty file is stat'ed, not copied. */
  readonly copyBudgetBytes: number
}

export const defaultLimits: Limits = { maxFiles: 20, maxFileBytes: 256 * 1024, copyBudgetBytes: 4 * 1024 * 1024 }

export interface Options {
  readonly git?: Git
  readonly limits?: Partial<Limits>
}

/** A file listed by `git status` at the snapshot, with what it was then. */
export interface DirtyFile {
  readonly entry: StatusEntry
  readonly stat: Files.Stat | undefined
  readonly copy: Files.Content
}

export interface Snapshot {
  /** The work tree's root, absolute (as found from the cwd, not resolved through links). */
  readonly root: string
  /** Dirty, untracked (and unmerged) files by {@link StatusEntry.key}. */
  readonly files: ReadonlyMap<string, DirtyFile>
  /** Wall clock (ms) when the status began: an mtime at or after it may hide a same-tick write. */
  readonly startedAtMs: number
  /** How long the snapshot took (status, stats and copies), ms. */
  readonly durationMs: number
  readonly copiedBytes: number
  readonly limits: Limits
}

export type Change = "created" | "modified" | "deleted"

export interface FileChange {
  /** Absolute path (lossy when the name is not UTF-8; see the module comment). */
  readonly path: string
  readonly change: Change
  /** Absent when the file is binary, too large, or its old text was not kept: `note` says which. */
  readonly diff?: { readonly oldText: string | null; readonly newText: string }
  readonly note?: string
}

export interface FileChanges {
  /** At most `maxFiles`, ordered by path bytes. */
  readonly files: ReadonlyArray<FileChange>
  /**
   * Files beyond `maxFiles` whose status or stat changed, not shown and not read (so one whose
   * content turned out the same, a `touch`, would be counted here).
   */
  readonly omitted: number
}

export const noChanges: FileChanges = { files: [], omitted: 0 }

/** The text for the files beyond the cap. */
export const omittedNote = (omitted: number): string => `and ${omitted} more file${omitted === 1 ? "" : "s"} changed`

const limitsOf = (options: Options): Limits => ({ ...defaultLimits, ...options.limits })

const shown = (entry: StatusEntry): boolean => entry.kind !== "ignored" && !entry.submodule

const status = (git: Git, root: string): Effect.Effect<Map<string, StatusEntry>, GitError> =>
  Effect.flatMap(neutralisedFilters(git, root), (off) =>
    git.run(root, [...off, ...statusArgs]).pipe(Effect.map((out) => new Map(parse(out).filter(shown).map((e) => [e.key, e])))))

/**
 * A snapshot from a status already taken (`entries`, begun at `startedAtMs` / `started`): stats
 * and bounded copies of the files it lists, taken now. Valid as long as nothing changed since the
 * status began.
 */
const capture = (
  root: string,
  entries: ReadonlyMap<string, StatusEntry>,
  limits: Limits,
  startedAtMs: number,
  started: number
): Effect.Effect<Snapshot> =>
  Effect.gen(function*() {
    const rootReal = yield* Files.realRoot(root)
    const sorted = [...entries.values()].sort((a, b) => Buffer.compare(a.path, b.path))
    const stats = yield* Effect.forEach(sorted, (e) => Files.lstat(Files.join(root, e.path)))
    // Copies in path order while the budget lasts; a file over the per-file limit would get a
    // note anyway, so it costs nothing.
    let budget = limits.copyBudgetBytes
    const files = yield* Effect.forEach(sorted, (entry, i) => {
      const stat = stats[i]
      const content = stat === undefined
        ? Effect.succeed(Files.absent)
        : stat.size > limits.maxFileBytes
        ? Effect.succeed(Files.tooLarge(stat.size))
        : stat.size > budget
        ? Effect.succeed(Files.skipped("its old text was not kept (copy budget spent)"))
        : (budget -= stat.size, Files.read(root, rootReal, entry.path, stat, limits.maxFileBytes))
      return Effect.map(content, (copy): [string, DirtyFile] => [entry.key, { entry, stat, copy }])
    })
    let copiedBytes = 0
    for (const [, f] of files) if (f.copy._tag === "Bytes") copiedBytes += f.copy.bytes.length
    return { root, files: new Map(files), startedAtMs, durationMs: performance.now() - started, copiedBytes, limits }
  })

/**
 * The status of the work tree holding `cwd`, with stats and bounded copies of the dirty files.
 * None outside a work tree (found with `stat` calls only: no process is spawned); fails when git
 * does (a `.git` git rejects, a repository owned by another user, no `git` on PATH).
 */
export const snapshotOrFail = (cwd: string, options: Options = {}): Effect.Effect<Option.Option<Snapshot>, GitError> =>
  Effect.gen(function*() {
    const found = yield* findWorkTree(cwd)
    if (Option.isNone(found)) return Option.none()
    const startedAtMs = Date.now()
    const started = performance.now()
    const entries = yield* status(options.git ?? live, found.value)
    return Option.some(yield* capture(found.value, entries, limitsOf(options), startedAtMs, started))
  })

/** {@link snapshotOrFail}, with a git failure as None (logged at debug level). */
export const snapshot = (cwd: string, options: Options = {}): Effect.Effect<Option.Option<Snapshot>> =>
  snapshotOrFail(cwd, options).pipe(
    Effect.catchTag("GitError", (e) =>
      Effect.logDebug(`changed files: no snapshot (git ${e.args.join(" ")}: ${e.message})`).pipe(Effect.as(Option.none()))
    )
  )

// Coarse kernel timestamps: a write in the same tick as the snapshot can leave mtime and ctime as
// they were (and an in-place write keeps size and inode). For a file whose mtime is this recent
// the content copy decides.
const RACY_MS = 1_000

const racy = (before: Snapshot, stat: Files.Stat): boolean => Number(stat.mtimeNs / 1_000_000n) >= before.startedAtMs - RACY_MS

const sameBytes = (a: Files.Content, b: Files.Content): boolean =>
  a._tag === "Bytes" && b._tag === "Bytes" ? a.bytes.equals(b.bytes) : a._tag === "Absent" && b._tag === "Absent"

interface Candidate {
  readonly key: string
  readonly path: Buffer
  readonly before: DirtyFile | undefined
  readonly after: StatusEntry | undefined
  /** Read during detection (a racy file); reused for the diff. */
  readonly now?: Files.Content
}

const isBinary = (b: Buffer): boolean => b.includes(0)

const render = (path: string, change: Change, old: Files.Content, now: Files.Content): FileChange => {
  const note = (text: string): FileChange => ({ path, change, note: text })
  for (const c of [old, now]) {
    if (c._tag === "TooLarge") return note(`no diff: larger than ${Math.round(c.size / 1024)} KiB`)
    if (c._tag === "Skipped") return note(`no diff: ${c.reason}`)
    if (c._tag === "Bytes" && isBinary(c.bytes)) return note("no diff: binary file")
  }
  return {
    path,
    change,
    diff: {
      oldText: old._tag === "Bytes" ? old.bytes.toString("utf8") : null,
      newText: now._tag === "Bytes" ? now.bytes.toString("utf8") : ""
    }
  }
}

/**
 * What changed since `before`: a second status, compared. Fails only when that `git status` fails.
 */
export const changes = (before: Snapshot, options: Options = {}): Effect.Effect<FileChanges, GitError> =>
  Effect.map(compare(before, options), (c) => c.changes)

/**
 * {@link changes}, and the second status as the snapshot a next command can start from (its
 * stats and copies taken after the comparison: valid while nothing changes after the status began).
 */
export const changesAndNext = (
  before: Snapshot,
  options: Options = {}
): Effect.Effect<{ readonly changes: FileChanges; readonly next: Snapshot }, GitError> =>
  Effect.flatMap(compare(before, options), ({ after, changes, started, startedAtMs }) =>
    Effect.map(capture(before.root, after, before.limits, startedAtMs, started), (next) => ({ changes, next })))

const compare = (before: Snapshot, options: Options) =>
  Effect.gen(function*() {
    const git = options.git ?? live
    const { root, limits } = before
    const startedAtMs = Date.now()
    const started = performance.now()
    const after = yield* status(git, root)
    const rootReal = yield* Files.realRoot(root)
    const keys = [...new Set([...before.files.keys(), ...after.keys()])].sort()

    // Detection: listed only once, or listed with another status, is a change; listed both times
    // the same way, the stat (and for a racy file the bytes) decides.
    const detected = yield* Effect.forEach(keys, (key) =>
      Effect.gen(function*() {
        const b = before.files.get(key)
        const a = after.get(key)
        const path = (b?.entry ?? a!).path
        if (b === undefined || a === undefined || b.entry.xy !== a.xy) return Option.some<Candidate>({ key, path, before: b, after: a })
        const stat = yield* Files.lstat(Files.join(root, path))
        if (!Files.sameStat(b.stat, stat)) return Option.some<Candidate>({ key, path, before: b, after: a })
        if (stat === undefined || !racy(before, stat) || b.copy._tag !== "Bytes") return Option.none<Candidate>()
        const now = yield* Files.read(root, rootReal, path, stat, limits.maxFileBytes)
        return sameBytes(b.copy, now) ? Option.none<Candidate>() : Option.some<Candidate>({ key, path, before: b, after: a, now })
      }))
    const candidates = detected.flatMap((c) => Option.isSome(c) ? [c.value] : [])

    // Rendering, in batches until `maxFiles` are shown: a candidate whose content turns out
    // identical (a `touch`) is dropped, and the next one takes its place.
    const files: Array<FileChange> = []
    let next = 0
    while (files.length < limits.maxFiles && next < candidates.length) {
      const batch = candidates.slice(next, next + limits.maxFiles - files.length)
      next += batch.length
      // Old text of a file clean before the command: its HEAD blob (the index matched HEAD).
      const oids = batch.flatMap((c) => c.before === undefined && c.after?.headOid !== undefined ? [c.after.headOid] : [])
      const blobs = yield* readBlobs(git, root, oids, limits.maxFileBytes)
      const rendered = yield* Effect.forEach(batch, (c) =>
        Effect.gen(function*() {
          const old: Files.Content = c.before !== undefined
            ? c.before.copy
            : c.after?.headOid === undefined
            ? Files.absent
            : blobFor(blobs.get(c.after.headOid))
          const now = c.now ?? (yield* Files.lstat(Files.join(root, c.path)).pipe(
            Effect.flatMap((stat) => Files.read(root, rootReal, c.path, stat, limits.maxFileBytes))
          ))
          if (old._tag === "Absent" && now._tag === "Absent") return Option.none<FileChange>()
          if (sameBytes(old, now)) return Option.none<FileChange>()
          const change: Change = old._tag === "Absent" ? "created" : now._tag === "Absent" ? "deleted" : "modified"
          return Option.some(render(Files.join(root, c.path).toString("utf8"), change, old, now))
        }))
      for (const r of rendered) if (Option.isSome(r)) files.push(r.value)
    }
    return { changes: { files, omitted: candidates.length - next } satisfies FileChanges, after, started, startedAtMs }
  })

const blobFor = (blob: { readonly size: number; readonly bytes?: Buffer } | undefined): Files.Content =>
  blob === undefined
    ? Files.skipped("its old text is not in the repository")
    : blob.bytes === undefined
    ? Files.tooLarge(blob.size)
    : Files.bytes(blob.bytes)
