/**
 * Knowing, without a process, that a work tree has not changed since a moment: one inotify watch
 * (`fs.watch`, non-recursive) per directory that can hold a file `git status` reports (see
 * WatchedDirs), plus the git directory (index, HEAD: `git add`, commit, checkout), its branches
 * and its exclude rules. Every event, watcher error or re-arm moves a sequence number; a snapshot
 * taken while the watcher was armed at number n is still the tree's state while the number is n.
 *
 * Not `fs.watch(root, { recursive: true })`: on Node 20 Linux that walks the tree synchronously,
 * puts a watch on every file, and enters ignored trees (node_modules).
 *
 * Ordering, the correctness crux:
 * - The kernel queues an event during the write itself; libuv reads the inotify descriptor in the
 *   poll phase, until it is drained, and calls our listener there. {@link settle} waits until a
 *   poll phase that BEGAN after it was called has run: a `setImmediate` inside a `setImmediate`
 *   (the inner one runs in the next loop iteration's check phase, after that iteration's epoll
 *   wait). One `setImmediate` is not enough: called from a callback of the poll phase, it runs in
 *   this iteration's check phase, whose epoll wait returned before the callback ran — a write made
 *   synchronously in that callback, or an event queued since, would not be counted yet (a test
 *   that writes and calls at once showed it). So every event queued before the call is counted.
 *   Call it before deciding to reuse a snapshot (an edit the user saved before sending the prompt
 *   counts) and after a command's exit before deciding it changed nothing (its last writes
 *   precede its exit).
 * - A snapshot's number is read before its `git status` starts: an event during the status makes
 *   the snapshot not reusable (the safe direction: a spurious change costs a spawn, a missed one
 *   shows a wrong diff).
 * - A directory created after set-up is not watched yet: its creation is an event in its parent,
 *   which also marks the watcher stale (not armed) until a rescan re-walks the tree; the rescan
 *   watches a directory before listing it, and only arms (moving the number) when no directory
 *   appeared meanwhile. A `.gitignore` or an exclude file changing also asks for a rescan.
 *
 * Gaps, accepted: a change that makes no inotify event in a watched directory is missed — writes
 * through an `mmap`, through a hard link in another directory, on a network or FUSE file system
 * by another machine, and a global `core.excludesFile` edited outside the repository. An inotify
 * queue overflow (16,384 events unread) is not reported by libuv; it can only hide events queued
 * after those it kept, and those have already moved the number.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as FiberHandle from "effect/FiberHandle"
import * as MutableRef from "effect/MutableRef"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { Git } from "./Git.js"
import { type BytePath, bytes, childOf, gitDirs, ignoredDirs, walk } from "./WatchedDirs.js"

/**
 * Directories watched per work tree, at most. inotify watches are per user (the kernel's
 * historical default `max_user_watches` is 8,192, and the editor watches the same project): half
 * of that. A bigger tree (or a tree that grows past it) is not watched: a status per call, as
 * without the watcher.
 */
export const DEFAULT_MAX_DIRECTORIES = 4096

export type Phase = "setting-up" | "armed" | "stale" | "off"

export interface WorkTreeWatch {
  /** The sequence number while armed; None while setting up, stale, or off. */
  readonly current: Effect.Effect<Option.Option<number>>
  /** Waits until every event queued before the call has been counted (see the module comment). */
  readonly settle: Effect.Effect<void>
  /** When not armed (stale, or still setting up), re-walks the tree in the background; else nothing. */
  readonly refresh: Effect.Effect<void>
  readonly phase: Effect.Effect<{ readonly phase: Phase; readonly directories: number }>
}

/** What a watched directory is, for what its events mean. */
type Kind = "tree" | "gitTop" | "exclude"

interface Watched {
  readonly watcher: fs.FSWatcher
  readonly kind: Kind
}

/** Resumes once a whole poll phase that began after the call has run (see the module comment). */
export const settle: Effect.Effect<void> = Effect.async<void>((resume) => {
  let handle = setImmediate(() => {
    handle = setImmediate(() => resume(Effect.void))
  })
  return Effect.sync(() => clearImmediate(handle))
})

export const make = (
  root: string,
  git: Git,
  maxDirectories: number = DEFAULT_MAX_DIRECTORIES
): Effect.Effect<WorkTreeWatch, never, Scope.Scope> =>
  Effect.gen(function*() {
    const rootKey: BytePath = Buffer.from(root).toString("latin1")
    const dirs = gitDirs(root)
    // Synchronous state: inotify listeners are plain callbacks that must count an event at once.
    const seq = MutableRef.make(0)
    const phase = MutableRef.make<Phase>(dirs === undefined ? "off" : "setting-up")
    // Directories ignored as a whole at the last walk: recreating one (`rm -rf build && make`) needs no rescan.
    const ignored = MutableRef.make<ReadonlySet<BytePath>>(new Set())
    const watched = new Map<BytePath, Watched>()
    const rescans = yield* FiberHandle.make()

    const bump = () => void MutableRef.increment(seq)
    const stale = () => {
      bump()
      if (MutableRef.get(phase) !== "off") MutableRef.set(phase, "stale")
    }
    const unwatch = (dir: BytePath) => {
      for (const [key, w] of watched) {
        if (key === dir || key.startsWith(`${dir}/`)) {
          w.watcher.close()
          watched.delete(key)
        }
      }
    }
    const closeAll = () => {
      for (const w of watched.values()) w.watcher.close()
      watched.clear()
    }
    // Once the scope has closed, a rescan still finishing (its fiber is interrupted after this
    // finalizer) must not set up watches nobody would close.
    const closed = MutableRef.make(false)
    // Off, and a new number: a call waiting in `settle` must not then reuse a snapshot on the word of
    // a watcher whose pending events were dropped with it (the tracker closes one mid-session).
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        MutableRef.set(closed, true)
        MutableRef.set(phase, "off")
        bump()
        closeAll()
      })
    )

    const onEvent = (dir: BytePath, kind: Kind) => (event: string, filename: Buffer | string | null) => {
      bump()
      const name = filename === null ? undefined : (typeof filename === "string" ? Buffer.from(filename) : filename).toString("latin1")
      // In the git directory the config (`core.excludesFile`) and a new `info/` can change which
      // directories are ignored, and so can the index: a file force-added (`git add -f`) or checked
      // out under an ignored directory makes git report it, so that directory must be watched from
      // then on. The rest (HEAD, refs) moves the number, nothing more.
      if (kind === "gitTop") {
        const reWalk = name === "config" || name === "info" || (name === "index" && MutableRef.get(ignored).size > 0)
        return reWalk ? stale() : undefined
      }
      if (kind === "exclude" || name === undefined || name === ".gitignore") return stale()
      const child = childOf(dir, name)
      // A watched directory renamed, removed or replaced: its watch follows the old inode.
      if (watched.has(child)) {
        unwatch(child)
        return stale()
      }
      if (event !== "rename" || MutableRef.get(phase) === "stale") return
      if (kind === "tree" && MutableRef.get(ignored).has(child.slice(rootKey.length + 1))) return
      const st = fs.lstatSync(bytes(child), { throwIfNoEntry: false })
      if (st?.isDirectory()) stale()
    }

    /** Watches `dir`; false when the kernel refuses (out of watches): the whole watcher is off. */
    const watch = (dir: BytePath, kind: Kind): boolean => {
      if (watched.has(dir) || MutableRef.get(closed)) return true
      try {
        const watcher = fs.watch(bytes(dir), { persistent: false, encoding: "buffer" }, onEvent(dir, kind))
        // An errored watch reports nothing more: drop it, and let a rescan set it up again.
        watcher.on("error", () => {
          unwatch(dir)
          stale()
        })
        watched.set(dir, { watcher, kind })
        return true
      } catch (e) {
        // Gone since it was listed: its removal is an event in its parent.
        return (e as NodeJS.ErrnoException).code === "ENOENT"
      }
    }

    const turnOff = (why: string) =>
      Effect.suspend(() => {
        closeAll()
        MutableRef.set(phase, "off")
        bump()
        return Effect.logInfo(`changed files: not watching ${root} (${why}): a git status per call`)
      })

    /** Sets the whole watch up again: the git directory, then the tree walked from the root. */
    const rescan = Effect.gen(function*() {
      if (dirs === undefined || MutableRef.get(phase) === "off") return
      MutableRef.set(phase, "setting-up")
      const gitKeys = [
        [dirs.gitDir, "gitTop"],
        [dirs.commonDir, "gitTop"],
        [path.join(dirs.commonDir, "info"), "exclude"]
      ] as const
      for (const [dir, kind] of gitKeys) {
        if (!watch(Buffer.from(dir).toString("latin1"), kind)) return yield* turnOff("out of inotify watches")
      }
      const found = yield* Effect.either(Effect.timeout(ignoredDirs(git, root), "10 seconds"))
      if (found._tag === "Left") return yield* turnOff(`git status: ${found.left.message}`)
      MutableRef.set(ignored, found.right)
      const visited = new Set<BytePath>()
      let refused = false
      const enter = (dir: BytePath) => {
        visited.add(dir)
        if (!watch(dir, "tree")) refused = true
      }
      const leave = (dir: BytePath) => {
        visited.delete(dir)
        unwatch(dir)
      }
      // The branches (a commit moves one; a name with a slash is a directory).
      const refs = Buffer.from(path.join(dirs.commonDir, "refs", "heads")).toString("latin1")
      const budget = maxDirectories - gitKeys.length
      const refsEnd = yield* walk(refs, new Set(), budget, enter, leave)
      const treeEnd = refsEnd === "over" ? "over" : yield* walk(rootKey, found.right, budget - visited.size, enter, leave)
      if (refused) return yield* turnOff("out of inotify watches")
      if (treeEnd === "over") return yield* turnOff(`over ${maxDirectories} directories`)
      for (const [key, w] of watched) if (w.kind === "tree" && !visited.has(key)) unwatch(key)
      // Armed only if nothing asked for another rescan while this one walked.
      if (MutableRef.get(phase) === "setting-up") {
        MutableRef.set(phase, "armed")
        bump()
        yield* Effect.logDebug(`changed files: watching ${watched.size} directories of ${root}`)
      }
    })

    return {
      current: Effect.sync(() => (MutableRef.get(phase) === "armed" ? Option.some(MutableRef.get(seq)) : Option.none())),
      settle,
      refresh: Effect.suspend(() => {
        const p = MutableRef.get(phase)
        return p === "off" || p === "armed" ? Effect.void : Effect.asVoid(FiberHandle.run(rescans, rescan, { onlyIfMissing: true }))
      }),
      phase: Effect.sync(() => ({ phase: MutableRef.get(phase), directories: watched.size }))
    }
  })
