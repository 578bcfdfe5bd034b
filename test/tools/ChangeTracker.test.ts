/**
 * The per-session switch and cost guard, and the porcelain v2 parser on hand-written records.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as ChangeTracker from "../../src/Tools/Bash/ChangeTracker.js"
import { gitEnv } from "../../src/Tools/Bash/Git.js"
import * as GitStatus from "../../src/Tools/Bash/GitStatus.js"
import { bash, countingGit, initRepo, tempDir } from "./changedFilesSupport.js"

const captureLogs = () => {
  const logs: Array<string> = []
  const layer = Logger.replace(Logger.defaultLogger, Logger.make(({ logLevel, message }) => void logs.push(`${logLevel.label} ${String(message)}`)))
  return { logs, layer }
}

describe("ChangeTracker", () => {
  it.scopedLive("around: the command's result, then the changes once asked for", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const tracker = yield* ChangeTracker.make()
      const [result, later] = yield* tracker.around(repo, Effect.sync(() => (bash(repo, "echo x > new.txt"), 42)))
      expect(result).toBe(42)
      const changes = yield* later
      expect(changes.files.map((f) => [path.basename(f.path), f.change])).toEqual([["new.txt", "created"]])
    }))

  it.scopedLive("disabled (--no-diffs / DSH_ACP_DIFFS=0): no snapshot, no git", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir())
      const counting = countingGit()
      const tracker = yield* ChangeTracker.make({ enabled: false, git: counting.git })
      expect(Option.isNone(yield* tracker.before(repo))).toBe(true)
      expect(yield* tracker.enabled).toBe(false)
      expect(counting.spawns()).toBe(0)
    }))

  it.scopedLive("a snapshot over the budget turns it off for the session, with one log line", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const counting = countingGit()
      const { logs, layer } = captureLogs()
      const tracker = yield* ChangeTracker.make({ budgetMs: 0, git: counting.git })
      // Two at once: both snapshot (both started while on), both go over, one logs.
      const [first, second] = yield* Effect.all([tracker.before(repo), tracker.before(repo)], { concurrency: 2 }).pipe(
        Effect.provide(layer)
      )
      expect(Option.isSome(first) && Option.isSome(second)).toBe(true)
      expect(yield* tracker.enabled).toBe(false)
      const spawned = counting.spawns()
      // The snapshot that went over is still compared (its cost is paid).
      fs.writeFileSync(path.join(repo, "tracked.txt"), "b\n")
      if (Option.isSome(first)) expect((yield* tracker.after(first.value)).files).toHaveLength(1)
      // Then nothing more is spawned for this session.
      const spawnedAfterCompare = counting.spawns()
      expect(spawnedAfterCompare).toBeGreaterThan(spawned)
      expect(Option.isNone(yield* tracker.before(repo).pipe(Effect.provide(layer)))).toBe(true)
      expect(counting.spawns()).toBe(spawnedAfterCompare)
      expect(logs.filter((l) => l.includes("changed files: off for this session"))).toHaveLength(1)
      expect(logs.find((l) => l.includes("off for this session"))).toMatch(/^WARN .*budget 0 ms/)
    }))

  it.scopedLive("after: a git failure is no changes, not an error", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const repo = initRepo(dir)
      const tracker = yield* ChangeTracker.make()
      const snap = yield* tracker.before(repo)
      fs.rmSync(path.join(repo, ".git"), { recursive: true })
      if (Option.isNone(snap)) throw new Error("no snapshot")
      expect(yield* tracker.after(snap.value)).toEqual({ files: [], omitted: 0 })
    }))

  it.scopedLive("a work tree where git fails is not asked again in the session", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      fs.writeFileSync(path.join(dir, ".git"), "gitdir: /nonexistent\n")
      const counting = countingGit()
      const { logs, layer } = captureLogs()
      const tracker = yield* ChangeTracker.make({ git: counting.git, budgetMs: 60_000 })
      expect(Option.isNone(yield* tracker.before(dir).pipe(Effect.provide(layer)))).toBe(true)
      expect(Option.isNone(yield* tracker.before(dir).pipe(Effect.provide(layer)))).toBe(true)
      expect(counting.spawns()).toBe(1)
      expect(logs.filter((l) => l.includes(`changed files: none for ${dir}`))).toHaveLength(1)
      // Other work trees still work.
      const repo = initRepo(yield* tempDir())
      expect(Option.isSome(yield* tracker.before(repo))).toBe(true)
    }))

  it("enabledFromEnv", () => {
    expect(ChangeTracker.enabledFromEnv({})).toBe(true)
    expect(ChangeTracker.enabledFromEnv({ DSH_ACP_DIFFS: "1" })).toBe(true)
    for (const off of ["0", "false", "OFF", "no", " 0 "]) expect(ChangeTracker.enabledFromEnv({ DSH_ACP_DIFFS: off })).toBe(false)
  })
})

describe("ChangeTracker: a git that never ends", () => {
  it.scopedLive("is stopped (not waited for), and the feature turns off for the session", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "a.txt": "a\n" })
      let interrupted = 0
      const hanging = { run: () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void interrupted++))) }
      const tracker = yield* ChangeTracker.make({ budgetMs: 10, git: hanging })
      expect(Option.isNone(yield* tracker.before(repo))).toBe(true)
      expect(interrupted).toBe(1)
      expect(yield* tracker.enabled).toBe(false)
    }))
})

describe("Git", () => {
  it("git's environment: no prompt, no optional index lock, C locale, nothing pointing at another repository", () => {
    const env = gitEnv({ PATH: "/bin", GIT_DIR: "/elsewhere/.git", GIT_WORK_TREE: "/elsewhere", GIT_INDEX_FILE: "/i", HOME: "/h" })
    expect(env).toEqual({ PATH: "/bin", HOME: "/h", GIT_TERMINAL_PROMPT: "0", GIT_OPTIONAL_LOCKS: "0", GIT_NO_LAZY_FETCH: "1", LC_ALL: "C" })
  })
})

describe("GitStatus.parse", () => {
  const record = (...parts: Array<string | Buffer>) => Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : p)))
  const oid = (c: string) => c.repeat(40)

  it("every record type, paths kept as bytes", () => {
    const weird = Buffer.from([0x61, 0x20, 0x0a, 0xff, 0x62]) // "a \n\xffb"
    const out = record(
      "# branch.oid ", oid("1"), "\0",
      `1 .M N... 100644 100644 100644 ${oid("a")} ${oid("a")} `, weird, "\0",
      `1 A. N... 000000 100644 100644 ${oid("0")} ${oid("b")} added file\0`,
      `2 R. N... 100644 100644 100644 ${oid("c")} ${oid("c")} R100 new name\0old name\0`,
      `u UU N... 100644 100644 100644 100644 ${oid("d")} ${oid("e")} ${oid("f")} conflicted\0`,
      `1 .M SC.. 160000 160000 160000 ${oid("9")} ${oid("9")} sub\0`,
      "? untracked one\0",
      "! ignored\0"
    )
    const entries = GitStatus.parse(out)
    expect(entries.map((e) => [e.kind, e.path.toString("latin1"), e.xy, e.headOid, e.submodule])).toEqual([
      ["tracked", weird.toString("latin1"), ".M", oid("a"), false],
      ["tracked", "added file", "A.", undefined, false],
      ["tracked", "new name", "R.", oid("c"), false],
      ["unmerged", "conflicted", "UU", oid("e"), false], // stage 2 (ours, HEAD), not the merge base
      ["tracked", "sub", ".M", oid("9"), true],
      ["untracked", "untracked one", "??", undefined, false],
      ["ignored", "ignored", "!!", undefined, false]
    ])
    expect(entries[0]!.path.equals(weird)).toBe(true)
  })

  it("empty output, and a truncated record, parse without throwing", () => {
    expect(GitStatus.parse(Buffer.alloc(0))).toEqual([])
    expect(GitStatus.parse(Buffer.from("1 .M N... 100644"))).toEqual([])
  })
})
