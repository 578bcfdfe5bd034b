/**
 * The tracker reusing a snapshot while its work-tree watcher saw nothing: real git, real files,
 * real inotify. Reuse is observed by counting git processes (the injected runner), never by time.
 * The "between calls" edits are written synchronously right before the next call starts, without
 * a turn of the event loop in between: the inotify event is then queued but not yet delivered,
 * which is the ordering the tracker must handle.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as ChangedFiles from "../../src/Tools/Bash/ChangedFiles.js"
import type { Git } from "../../src/Tools/Bash/Git.js"
import * as ChangeTracker from "../../src/Tools/Bash/ChangeTracker.js"
import { bash, countingGit, git, initRepo, tempDir } from "./changedFilesSupport.js"

/** Snapshot, command (a bash script, or an effect), changes; and how many git processes the call spawned. */
const call = (tracker: ChangeTracker.ChangeTracker, counting: ReturnType<typeof countingGit>, cwd: string, command: string | Effect.Effect<void>) =>
  Effect.gen(function*() {
    const spawned = counting.spawns()
    const before = yield* tracker.before(cwd)
    const spawnedBefore = counting.spawns() - spawned
    if (Option.isNone(before)) throw new Error(`no snapshot in ${cwd}`)
    if (typeof command === "string") bash(cwd, command)
    else yield* command
    const changes = yield* tracker.after(before.value)
    return { changes, spawnedBefore, spawned: counting.spawns() - spawned }
  })

const names = (changes: ChangedFiles.FileChanges) => changes.files.map((f) => [path.basename(f.path), f.change, f.diff?.oldText, f.diff?.newText])

/** Polls the watcher's phase until `want` (the set-up runs in the background). */
const phaseIs = (tracker: ChangeTracker.ChangeTracker, cwd: string, want: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1000; i++) {
      const w = yield* tracker.watching(cwd)
      if (Option.isSome(w) && w.value.phase === want) return w.value
      yield* Effect.sleep("10 millis")
    }
    throw new Error(`the watcher of ${cwd} never became ${want}: ${JSON.stringify(yield* tracker.watching(cwd))}`)
  })

/**
 * A tracker whose watcher is armed and whose kept snapshot is current: the first call sets the
 * watcher up, the second (once armed) takes the snapshot the next calls can reuse.
 */
const warmTracker = (repo: string, config: ChangeTracker.Config = {}) =>
  Effect.gen(function*() {
    const counting = countingGit()
    const tracker = yield* ChangeTracker.make({ ...config, git: counting.git, budgetMs: 60_000 })
    yield* call(tracker, counting, repo, "true")
    yield* phaseIs(tracker, repo, "armed")
    yield* call(tracker, counting, repo, "true")
    return { tracker, counting, run: (command: string | Effect.Effect<void>) => call(tracker, counting, repo, command) }
  })

/** The inotify watches this process holds (from /proc: an honest count of what is set up). */
const inotifyWatches = (): number => {
  let n = 0
  for (const fd of fs.readdirSync("/proc/self/fdinfo")) {
    try {
      n += (fs.readFileSync(`/proc/self/fdinfo/${fd}`, "utf8").match(/^inotify wd:/gm) ?? []).length
    } catch {
      // closed meanwhile
    }
  }
  return n
}

/** A repository with two directories, outside any test scope: these tests close their own scopes. */
const unscopedRepo = () =>
  initRepo(fs.realpathSync(fs.mkdtempSync(path.join(process.env.TMPDIR ?? "/tmp", "dsh-acp-watch-"))), {
    "a/1.txt": "1\n",
    "b/2.txt": "2\n"
  })

describe("ChangeTracker with a work-tree watcher", () => {
  it.scopedLive("two calls of `true` in an unchanged repository: no git process at all", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "a/one.txt": "1\n", "b/two.txt": "2\n", "dirty.txt": "d\n" })
      fs.writeFileSync(path.join(repo, "dirty.txt"), "dirty\n")
      fs.writeFileSync(path.join(repo, "untracked.txt"), "u\n")
      const { run } = yield* warmTracker(repo)
      for (let i = 0; i < 2; i++) {
        const r = yield* run("true")
        expect(r.spawned).toBe(0)
        expect(r.changes).toEqual({ files: [], omitted: 0 })
      }
      // The reused snapshot still holds the copies a before needs: this command's change only.
      const edited = yield* run("sed -i 's/dirty/DIRTY/' dirty.txt")
      expect(edited.spawnedBefore).toBe(0)
      expect(names(edited.changes)).toEqual([["dirty.txt", "modified", "dirty\n", "DIRTY\n"]])
    }))

  it.scopedLive("without the watcher (watch: false) every call spawns a status before and after", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "a.txt": "a\n" })
      const counting = countingGit()
      const tracker = yield* ChangeTracker.make({ watch: false, git: counting.git, budgetMs: 60_000 })
      for (let i = 0; i < 3; i++) {
        const r = yield* call(tracker, counting, repo, "true")
        expect(r.spawnedBefore).toBe(1)
        expect(r.spawned).toBe(2)
      }
      expect(Option.isNone(yield* tracker.watching(repo))).toBe(true)
    }))

  it.scopedLive("a file the user saved just before the call is not this command's change", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n", "other.txt": "o\n" })
      const { run } = yield* warmTracker(repo)
      // Written, then the call starts with no turn of the event loop between: its event is pending.
      const edited = yield* Effect.suspend(() => {
        fs.writeFileSync(path.join(repo, "tracked.txt"), "edited by the user\n")
        return run("echo y > y.txt")
      })
      expect(edited.spawnedBefore).toBe(1)
      expect(names(edited.changes)).toEqual([["y.txt", "created", null, "y\n"]])
      // An edit to a file that was already dirty, too.
      const again = yield* Effect.suspend(() => {
        fs.writeFileSync(path.join(repo, "tracked.txt"), "edited twice\n")
        return run("echo z > z.txt")
      })
      expect(names(again.changes)).toEqual([["z.txt", "created", null, "z\n"]])
    }))

  it.scopedLive("a command's own writes are its diff, even when their events arrive after it returned", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const { run } = yield* warmTracker(repo)
      const appended = yield* run("printf 'b\\n' >> tracked.txt")
      expect(appended.spawnedBefore).toBe(0)
      expect(names(appended.changes)).toEqual([["tracked.txt", "modified", "a\n", "a\nb\n"]])
      // Written in-process just before `after`: the event is not delivered yet when it is asked.
      const sync = yield* run(Effect.sync(() => fs.writeFileSync(path.join(repo, "tracked.txt"), "c\n")))
      expect(names(sync.changes)).toEqual([["tracked.txt", "modified", "a\nb\n", "c\n"]])
      // The after-status of a command that changed files is the next command's snapshot.
      const next = yield* run("true")
      expect(next.spawned).toBe(0)
      const removed = yield* run("rm tracked.txt")
      expect(removed.spawnedBefore).toBe(0)
      expect(names(removed.changes)).toEqual([["tracked.txt", "deleted", "c\n", ""]])
    }))

  it.scopedLive("`git add`, a commit and a checkout between calls each invalidate the snapshot", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      fs.writeFileSync(path.join(repo, "tracked.txt"), "b\n")
      const { run, tracker } = yield* warmTracker(repo)
      expect((yield* run("true")).spawned).toBe(0)
      for (const step of [["add", "tracked.txt"], ["commit", "-qm", "b"], ["checkout", "-q", "-b", "topic"]]) {
        const r = yield* Effect.suspend(() => (git(repo, ...step), run("true")))
        expect(r.spawnedBefore, step.join(" ")).toBe(1)
        expect(r.changes, step.join(" ")).toEqual({ files: [], omitted: 0 })
        // A branch name is a new file in refs/heads, not a new directory: still armed, reused next.
        expect((yield* tracker.watching(repo)).pipe(Option.map((w) => w.phase))).toEqual(Option.some("armed"))
        expect((yield* run("true")).spawned, step.join(" ")).toBe(0)
      }
    }))

  it.scopedLive("a linked worktree: its index and HEAD (in the main repository's .git/worktrees) are watched", () =>
    Effect.gen(function*() {
      const main = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const linked = path.join(yield* tempDir(), "linked")
      git(main, "worktree", "add", "-q", linked)
      fs.writeFileSync(path.join(linked, "tracked.txt"), "b\n")
      const { run } = yield* warmTracker(linked)
      expect((yield* run("true")).spawned).toBe(0)
      const added = yield* Effect.suspend(() => (git(linked, "add", "tracked.txt"), run("true")))
      // A fresh snapshot (in a linked worktree also `git config`, for the filters: GitFilters).
      expect(added.spawnedBefore).toBeGreaterThan(0)
      const edited = yield* run("echo c > tracked.txt")
      expect(names(edited.changes)).toEqual([["tracked.txt", "modified", "b\n", "c\n"]])
    }))

  it.scopedLive("a new directory is watched once the tree is re-walked; so are empty and ignored-only ones", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { ".gitignore": "*.log\n", "logs/old.log": "" })
      fs.mkdirSync(path.join(repo, "empty"))
      fs.writeFileSync(path.join(repo, "logs", "old.log"), "x\n")
      const { run, tracker } = yield* warmTracker(repo)
      const inLogs = yield* run("echo l > logs/new.txt")
      expect(names(inLogs.changes)).toEqual([["new.txt", "created", null, "l\n"]])
      const inEmpty = yield* run("echo e > empty/new.txt")
      expect(names(inEmpty.changes)).toEqual([["new.txt", "created", null, "e\n"]])
      const made = yield* run("mkdir -p sub/deeper && echo x > sub/deeper/a.txt")
      expect(names(made.changes)).toEqual([["a.txt", "created", null, "x\n"]])
      yield* phaseIs(tracker, repo, "armed")
      yield* run("true") // the first snapshot after the re-walk
      const inNew = yield* run("echo y > sub/deeper/b.txt")
      expect(inNew.spawnedBefore).toBe(0)
      expect(names(inNew.changes)).toEqual([["b.txt", "created", null, "y\n"]])
    }))

  it.scopedLive("writes in an ignored directory: no diff, no error, and the snapshot is still reused", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { ".gitignore": "build/\nnode_modules\n", "src/a.ts": "a\n" })
      fs.mkdirSync(path.join(repo, "build"))
      fs.mkdirSync(path.join(repo, "node_modules", "pkg"), { recursive: true })
      const { run, tracker } = yield* warmTracker(repo)
      const watched = (yield* tracker.watching(repo)).pipe(Option.getOrThrow).directories
      const build = yield* run("echo o > build/out.o && mkdir -p build/deep && echo p > node_modules/pkg/index.js")
      expect(build.changes).toEqual({ files: [], omitted: 0 })
      expect(build.spawned).toBe(0)
      const byUser = yield* Effect.suspend(() => (fs.writeFileSync(path.join(repo, "build", "other.o"), "o\n"), run("true")))
      expect(byUser.spawned).toBe(0)
      // Recreating a known-ignored directory asks for no re-walk.
      yield* run("rm -rf build && mkdir build && echo o > build/out.o")
      expect((yield* tracker.watching(repo)).pipe(Option.map((w) => [w.phase, w.directories]))).toEqual(Option.some(["armed", watched]))
      const edit = yield* run("echo b > src/a.ts")
      expect(names(edit.changes)).toEqual([["a.ts", "modified", "a\n", "b\n"]])
    }))

  it.scopedLive("a file force-added under an ignored directory is watched from then on (the index asks for a re-walk)", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { ".gitignore": "build/\n", "a.txt": "a\n" })
      fs.mkdirSync(path.join(repo, "build"))
      fs.writeFileSync(path.join(repo, "build", "x"), "x\n")
      const { run, tracker } = yield* warmTracker(repo)
      yield* run("git add -f build/x && git -c user.name=t -c user.email=t@t commit -qm force")
      yield* phaseIs(tracker, repo, "armed")
      yield* run("true")
      const edit = yield* run("echo x2 >> build/x")
      expect(names(edit.changes)).toEqual([["x", "modified", "x\n", "x\nx2\n"]])
    }))

  it.scopedLive("a directory no longer ignored (.gitignore edited) is watched after the re-walk", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { ".gitignore": "gen/\n", "a.txt": "a\n" })
      fs.mkdirSync(path.join(repo, "gen"))
      const { run, tracker } = yield* warmTracker(repo)
      const edited = yield* run("printf '' > .gitignore")
      expect(names(edited.changes)).toEqual([[".gitignore", "modified", "gen/\n", ""]])
      yield* phaseIs(tracker, repo, "armed")
      yield* run("true")
      const inGen = yield* run("echo g > gen/g.txt")
      expect(names(inGen.changes)).toEqual([["g.txt", "created", null, "g\n"]])
    }))

  it.scopedLive("over the directory bound: not watched, a status before and after every call, diffs as before", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "a/1.txt": "1\n", "b/2.txt": "2\n", "c/3.txt": "3\n" })
      const counting = countingGit()
      const watchesBefore = inotifyWatches()
      const tracker = yield* ChangeTracker.make({ git: counting.git, maxWatchedDirectories: 4, budgetMs: 60_000 })
      yield* call(tracker, counting, repo, "true")
      yield* phaseIs(tracker, repo, "off")
      // The watches set up before the walk went over the bound are closed again.
      expect(inotifyWatches()).toBe(watchesBefore)
      for (let i = 0; i < 2; i++) expect((yield* call(tracker, counting, repo, "true")).spawned).toBe(2)
      const edit = yield* call(tracker, counting, repo, "echo x >> c/3.txt")
      expect(names(edit.changes)).toEqual([["3.txt", "modified", "3\n", "3\nx\n"]])
    }))

  it.live("every watch is closed with the session's scope", () =>
    Effect.gen(function*() {
      const repo = unscopedRepo()
      const before = inotifyWatches()
      const during = yield* Effect.scoped(Effect.gen(function*() {
        yield* warmTracker(repo)
        return inotifyWatches()
      }))
      fs.rmSync(repo, { recursive: true, force: true })
      // The root, a, b, .git, .git/info and .git/refs/heads at least.
      expect(during - before).toBeGreaterThanOrEqual(6)
      expect(inotifyWatches()).toBe(before)
    }))

  it.live("when the feature turns itself off (over budget), its watches close at once, not with the session", () =>
    Effect.gen(function*() {
      const repo = unscopedRepo()
      const before = inotifyWatches()
      yield* Effect.scoped(Effect.gen(function*() {
        const counting = countingGit()
        // git turns slow (past the budget) when told: the tracker then turns the feature off.
        let slow = false
        const git: Git = {
          run: (root, args, options) =>
            slow ? Effect.zipRight(Effect.sleep("1200 millis"), counting.git.run(root, args, options)) : counting.git.run(root, args, options)
        }
        const tracker = yield* ChangeTracker.make({ git, budgetMs: 1000 })
        yield* call(tracker, counting, repo, "true")
        yield* phaseIs(tracker, repo, "armed")
        expect(inotifyWatches() - before).toBeGreaterThanOrEqual(6)
        slow = true
        yield* call(tracker, counting, repo, "echo x > x.txt")
        expect(yield* tracker.enabled).toBe(false)
        // The session (this scope) is still open.
        expect(inotifyWatches()).toBe(before)
        expect(Option.isNone(yield* tracker.watching(repo))).toBe(true)
      }))
      fs.rmSync(repo, { recursive: true, force: true })
    }))

  it.scopedLive("a command's write is still its change when another call turns the feature off meanwhile", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "a/1.txt": "1\n" })
      const other = initRepo(yield* tempDir(), { "a/1.txt": "1\n" })
      // The other work tree's status ends (over budget) only when the gate opens.
      const gate = yield* Deferred.make<void>()
      const counting = countingGit()
      const git: Git = {
        run: (root, args, options) =>
          root === other ? Effect.tap(counting.git.run(root, args, options), () => Deferred.await(gate)) : counting.git.run(root, args, options)
      }
      const tracker = yield* ChangeTracker.make({ git, budgetMs: 300 })
      yield* call(tracker, counting, repo, "true")
      yield* phaseIs(tracker, repo, "armed")
      yield* call(tracker, counting, repo, "true")
      const before = Option.getOrThrow(yield* tracker.before(repo))
      const slow = yield* Effect.fork(tracker.before(other))
      yield* Effect.sleep("500 millis")
      // The command wrote a file and exited; its `after` starts as the slow status turns the feature off.
      fs.writeFileSync(path.join(repo, "a", "new.txt"), "new\n")
      const after = yield* Effect.fork(tracker.after(before))
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(slow)
      const changes = yield* Fiber.join(after)
      expect(yield* tracker.enabled).toBe(false)
      expect(names(changes)).toEqual([["new.txt", "created", null, "new\n"]])
    }))
})
