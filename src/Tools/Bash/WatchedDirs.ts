/**
 * Which directories of a work tree a watcher must cover so that every change `git status` could
 * report makes an event: the directories a file git reports can be in, and the few places in the
 * git directory that hold the index, HEAD, the branches and the exclude rules.
 *
 * A work-tree directory qualifies unless git ignores it as a whole. Not "the directories of the
 * files git lists": an empty directory, or one holding only ignored files (`logs/` with `*.log`),
 * has no listed file, yet `echo x > logs/new.txt` makes one; so the tree is walked from the root,
 * skipping `.git`, nested repositories (a submodule's changes are not shown, see GitStatus) and
 * the directories `git status --ignored=matching` names (a directory that matches an ignore
 * pattern, like `node_modules/`, is named without being entered: cheap, and never walked). A
 * directory that only holds ignored files is not named by `matching` (it is by `traditional`,
 * which is why that mode is not used), so it is watched. A tracked file inside an ignored
 * directory keeps that directory out of the ignored list (git names the ignored parts below it).
 *
 * Paths are handled as bytes (latin1 strings of them, one char per byte, as in GitStatus), so a
 * directory whose name is not UTF-8 is watched as it is on disk.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import type { Git, GitError } from "./Git.js"
import { neutralisedFilters } from "./GitFilters.js"

/** A path's bytes as a string (see the module comment). */
export type BytePath = string

export const bytes = (p: BytePath): Buffer => Buffer.from(p, "latin1")
export const childOf = (dir: BytePath, name: BytePath): BytePath => `${dir}/${name}`

/** The git directory of a work tree and its common directory (they differ in a linked worktree). */
export interface GitDirs {
  readonly gitDir: string
  readonly commonDir: string
}

/**
 * Read from the files, no process: `.git` as a directory, or a `gitdir:` file (a linked worktree,
 * a submodule), and `commondir` inside it. Undefined when that is not readable as expected (then
 * nothing is watched: the caller falls back to a status per call).
 */
export const gitDirs = (root: string): GitDirs | undefined => {
  try {
    const dotGit = path.join(root, ".git")
    let gitDir = dotGit
    if (fs.statSync(dotGit).isFile()) {
      const m = /^gitdir: (.+)$/m.exec(fs.readFileSync(dotGit, "utf8"))
      if (m === null) return undefined
      gitDir = path.resolve(root, m[1]!.trim())
    }
    let commonDir = gitDir
    try {
      commonDir = path.resolve(gitDir, fs.readFileSync(path.join(gitDir, "commondir"), "utf8").trim())
    } catch {
      // No `commondir`: the git directory is its own common directory.
    }
    return fs.statSync(gitDir).isDirectory() && fs.statSync(commonDir).isDirectory() ? { gitDir, commonDir } : undefined
  } catch {
    return undefined
  }
}

/**
 * The directories git ignores as a whole, relative to the root, without the trailing slash. Run
 * off the critical path (at set-up and after a new directory appeared); like the snapshot's status,
 * with the repository's filters off and without the optional index lock, so it writes nothing.
 */
export const ignoredDirs = (git: Git, root: string): Effect.Effect<ReadonlySet<BytePath>, GitError> =>
  Effect.flatMap(neutralisedFilters(git, root), (off) =>
    Effect.map(
      git.run(root, [
        ...off,
        "-c",
        "core.fsmonitor=false",
        "status",
        "--porcelain=v2",
        "-z",
        "--ignored=matching",
        "--untracked-files=normal",
        "--no-renames",
        "--ignore-submodules=all"
      ]),
      (out) => {
        const dirs = new Set<BytePath>()
        for (const record of out.toString("latin1").split("\0")) {
          if (record.startsWith("! ") && record.endsWith("/")) dirs.add(record.slice(2, -1))
        }
        return dirs
      }
    ))

export type WalkEnd = "complete" | "over"

/**
 * Every directory of the work tree under `root` that may hold a file git reports, breadth first:
 * `enter(dir)` is called BEFORE the directory is listed (so a watch set up there sees whatever is
 * created after the listing, and the listing finds whatever was created before), `leave(dir)`
 * when it turns out to be a nested repository. More than `max` directories: stops with "over".
 * Listings are asynchronous (the thread pool), so a big tree does not block the event loop.
 */
export const walk = (
  root: BytePath,
  ignored: ReadonlySet<BytePath>,
  max: number,
  enter: (dir: BytePath) => void,
  leave: (dir: BytePath) => void
): Effect.Effect<WalkEnd> =>
  Effect.gen(function*() {
    let queue: Array<BytePath> = [root]
    let count = 0
    while (queue.length > 0) {
      const next: Array<BytePath> = []
      for (const dir of queue) {
        if (++count > max) return "over" as const
        enter(dir)
        const entries = yield* Effect.promise(() =>
          fs.promises.readdir(bytes(dir), { withFileTypes: true, encoding: "buffer" }).catch(() => [])
        )
        const names = entries.map((e) => ({ name: e.name.toString("latin1"), dir: e.isDirectory() }))
        if (dir !== root && names.some((e) => e.name === ".git")) {
          leave(dir)
          count--
          continue
        }
        for (const e of names) {
          // A symlink to a directory is a file to git (its target is not walked).
          if (!e.dir || (dir === root && e.name === ".git")) continue
          const child = childOf(dir, e.name)
          if (!ignored.has(child.slice(root.length + 1))) next.push(child)
        }
      }
      queue = next
    }
    return "complete" as const
  })
