/**
 * The changed-files machinery against real git in temporary repositories (real clock, real files).
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ChangedFiles from "../../src/Tools/Bash/ChangedFiles.js"
import * as GitFilters from "../../src/Tools/Bash/GitFilters.js"
import { around, countingGit, git, initRepo, only, tempDir } from "./changedFilesSupport.js"

describe("ChangedFiles: the issue's cases", () => {
  it.scopedLive("an append to a tracked file: old text from the index, new text exact", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const change = only(yield* around(repo, "printf 'b\\n' >> tracked.txt"))
      expect(change).toEqual({
        path: path.join(repo, "tracked.txt"),
        change: "modified",
        diff: { oldText: "a\n", newText: "a\nb\n" }
      })
    }))

  it.scopedLive("a new file: oldText null", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      expect(only(yield* around(repo, "echo x > new.txt"))).toEqual({
        path: path.join(repo, "new.txt"),
        change: "created",
        diff: { oldText: null, newText: "x\n" }
      })
    }))

  it.scopedLive("a removed file: newText empty", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      expect(only(yield* around(repo, "rm tracked.txt"))).toEqual({
        path: path.join(repo, "tracked.txt"),
        change: "deleted",
        diff: { oldText: "a\n", newText: "" }
      })
    }))

  it.scopedLive("sed -i on a file already dirty shows only this command's change", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      fs.writeFileSync(path.join(repo, "tracked.txt"), "a\nz\n")
      const change = only(yield* around(repo, "sed -i 's/z/y/' tracked.txt"))
      expect(change.diff).toEqual({ oldText: "a\nz\n", newText: "a\ny\n" })
    }))

  it.scopedLive("an in-place same-size rewrite of a dirty file right after the snapshot is seen (same tick, same inode)", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const file = path.join(repo, "tracked.txt")
      fs.writeFileSync(file, "a\nz\n")
      const changes = yield* around(repo, Effect.sync(() => fs.writeFileSync(file, "a\ny\n")))
      expect(only(changes).diff).toEqual({ oldText: "a\nz\n", newText: "a\ny\n" })
    }))

  it.scopedLive("true adds nothing, even with dirty and untracked files around", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      fs.writeFileSync(path.join(repo, "tracked.txt"), "dirty\n")
      fs.writeFileSync(path.join(repo, "untracked.txt"), "u\n")
      expect(yield* around(repo, "true")).toEqual({ files: [], omitted: 0 })
    }))

  it.scopedLive("25 files touched: 20 shown in path order, 5 omitted", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const changes = yield* around(repo, "for i in $(seq -w 1 25); do echo $i > f$i.txt; done")
      expect(changes.files).toHaveLength(20)
      expect(changes.omitted).toBe(5)
      expect(changes.files.map((f) => path.basename(f.path))).toEqual(
        Array.from({ length: 20 }, (_, i) => `f${String(i + 1).padStart(2, "0")}.txt`)
      )
      expect(ChangedFiles.omittedNote(changes.omitted)).toBe("and 5 more files changed")
    }))
})

describe("ChangedFiles: paths", () => {
  it.scopedLive("a path with spaces, a path with a newline, in a subdirectory cwd", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "sub dir/a b.txt": "1\n", "sub dir/new\nline.txt": "2\n" })
      const changes = yield* around(path.join(repo, "sub dir"), "echo 3 >> 'a b.txt'; echo 4 >> $'new\\nline.txt'; echo 5 > $'other\\nfile'")
      expect(changes.files).toEqual([
        { path: path.join(repo, "sub dir/a b.txt"), change: "modified", diff: { oldText: "1\n", newText: "1\n3\n" } },
        { path: path.join(repo, "sub dir/new\nline.txt"), change: "modified", diff: { oldText: "2\n", newText: "2\n4\n" } },
        { path: path.join(repo, "sub dir/other\nfile"), change: "created", diff: { oldText: null, newText: "5\n" } }
      ])
    }))

  it.scopedLive("a file name that is not UTF-8: read by its bytes, reported with a lossy path", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir())
      const name = Buffer.from([0x66, 0xff, 0xfe, 0x2e, 0x74, 0x78, 0x74]) // f\xff\xfe.txt
      const file = Buffer.concat([Buffer.from(repo + "/"), name])
      fs.writeFileSync(file, "old\n")
      git(repo, "add", "-A")
      git(repo, "commit", "-qm", "latin1 name")
      const modified = only(yield* around(repo, Effect.sync(() => fs.appendFileSync(file, "new\n"))))
      expect(modified.path).toBe(path.join(repo, "f\uFFFD\uFFFD.txt"))
      expect(modified.diff).toEqual({ oldText: "old\n", newText: "old\nnew\n" })
      // Untracked before, changed by the command: the copy was taken by bytes too.
      const untracked = Buffer.concat([Buffer.from(repo + "/"), Buffer.from([0xe9, 0x2e, 0x6d, 0x64])])
      fs.writeFileSync(untracked, "u\n")
      const changed = only(yield* around(repo, Effect.sync(() => fs.appendFileSync(untracked, "v\n"))))
      expect(changed.diff).toEqual({ oldText: "u\n", newText: "u\nv\n" })
    }))

  it.scopedLive("symlinks are never followed out of the repository: the diff shows the link's target path", () =>
    Effect.gen(function*() {
      const outside = yield* tempDir("dsh-acp-outside-")
      fs.writeFileSync(path.join(outside, "secret"), "TOP SECRET\n")
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const changes = yield* around(repo, `ln -s '${outside}/secret' link && rm tracked.txt && ln -s '${outside}/secret' tracked.txt`)
      expect(changes.files).toEqual([
        { path: path.join(repo, "link"), change: "created", diff: { oldText: null, newText: `${outside}/secret` } },
        { path: path.join(repo, "tracked.txt"), change: "modified", diff: { oldText: "a\n", newText: `${outside}/secret` } }
      ])
      expect(JSON.stringify(changes)).not.toContain("TOP SECRET")
    }))

  it.scopedLive("a file reached through a linked directory outside the repository is not read", () =>
    Effect.gen(function*() {
      const outside = yield* tempDir("dsh-acp-outside-")
      const repo = initRepo(yield* tempDir(), { "d/f.txt": "a\n" })
      // Dirty before; then the directory is swapped for a link to a look-alike outside.
      fs.writeFileSync(path.join(repo, "d/f.txt"), "b\n")
      fs.writeFileSync(path.join(outside, "f.txt"), "OUTSIDE\n")
      const changes = yield* around(repo, `rm -r d && ln -s '${outside}' d`)
      expect(JSON.stringify(changes)).not.toContain("OUTSIDE")
    }))

  it.scopedLive(".gitignore'd files are not reported", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { ".gitignore": "*.log\nbuild/\n" })
      expect(yield* around(repo, "echo x > app.log; mkdir build; echo y > build/out")).toEqual({ files: [], omitted: 0 })
    }))
})

describe("ChangedFiles: what gets a note instead of a diff", () => {
  it.scopedLive("a binary file", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir())
      expect(only(yield* around(repo, "printf 'a\\0b' > bin.dat"))).toEqual({
        path: path.join(repo, "bin.dat"),
        change: "created",
        note: "no diff: binary file"
      })
    }))

  it.scopedLive("a 300 KiB file", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir())
      const change = only(yield* around(repo, "head -c 307200 /dev/zero | tr '\\0' a > big.txt"))
      expect(change).toEqual({ path: path.join(repo, "big.txt"), change: "created", note: "no diff: larger than 300 KiB" })
    }))

  it.scopedLive("a dirty file whose copy did not fit the budget", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      fs.writeFileSync(path.join(repo, "tracked.txt"), "dirty\n")
      const change = only(yield* around(repo, "echo more >> tracked.txt", { limits: { copyBudgetBytes: 0 } }))
      expect(change.diff).toBeUndefined()
      expect(change.note).toMatch(/not kept/)
    }))
})

describe("ChangedFiles: old text", () => {
  it.scopedLive("an untracked file changed: old text from the snapshot's copy", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir())
      fs.writeFileSync(path.join(repo, "u.txt"), "u\n")
      expect(only(yield* around(repo, "echo v >> u.txt")).diff).toEqual({ oldText: "u\n", newText: "u\nv\n" })
    }))

  it.scopedLive("a clean file changed and staged by the command: old text from HEAD, not the new index", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      expect(only(yield* around(repo, "printf 'b\\n' >> tracked.txt && git add tracked.txt")).diff).toEqual({
        oldText: "a\n",
        newText: "a\nb\n"
      })
    }))

  it.scopedLive("touch on a dirty file, or staging it, changes no content: nothing shown", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      fs.writeFileSync(path.join(repo, "tracked.txt"), "dirty\n")
      expect(yield* around(repo, "sleep 0.01; touch tracked.txt; git add tracked.txt")).toEqual({ files: [], omitted: 0 })
    }))

  it.scopedLive("a dirty file restored by the command, and a deleted one restored", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "a.txt": "a\n", "b.txt": "b\n" })
      fs.writeFileSync(path.join(repo, "a.txt"), "changed\n")
      fs.rmSync(path.join(repo, "b.txt"))
      expect((yield* around(repo, "git checkout -q -- a.txt b.txt")).files).toEqual([
        { path: path.join(repo, "a.txt"), change: "modified", diff: { oldText: "changed\n", newText: "a\n" } },
        { path: path.join(repo, "b.txt"), change: "created", diff: { oldText: null, newText: "b\n" } }
      ])
    }))
})

describe("ChangedFiles: shapes", () => {
  it.scopedLive("a tracked file replaced by a directory is deleted; the files inside are created", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "x": "file\n" })
      expect((yield* around(repo, "rm x && mkdir x && echo in > x/y")).files).toEqual([
        { path: path.join(repo, "x"), change: "deleted", diff: { oldText: "file\n", newText: "" } },
        { path: path.join(repo, "x/y"), change: "created", diff: { oldText: null, newText: "in\n" } }
      ])
    }))

  it.scopedLive("a repository without commits: everything is new", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      git(dir, "init", "-q")
      fs.writeFileSync(path.join(dir, "staged"), "s\n")
      git(dir, "add", "staged")
      expect((yield* around(dir, "echo more >> staged; echo n > fresh")).files).toEqual([
        { path: path.join(dir, "fresh"), change: "created", diff: { oldText: null, newText: "n\n" } },
        { path: path.join(dir, "staged"), change: "modified", diff: { oldText: "s\n", newText: "s\nmore\n" } }
      ])
    }))
})

describe("ChangedFiles: outside git", () => {
  it.scopedLive("a cwd outside any work tree: None, and no git process", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const counting = countingGit()
      expect(Option.isNone(yield* ChangedFiles.snapshot(dir, { git: counting.git }))).toBe(true)
      expect(counting.spawns()).toBe(0)
    }))

  it.scopedLive("a .git that git rejects: None (git failed), no error", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      fs.writeFileSync(path.join(dir, ".git"), "gitdir: /nonexistent\n")
      const counting = countingGit()
      expect(Option.isNone(yield* ChangedFiles.snapshot(dir, { git: counting.git }))).toBe(true)
      expect(counting.spawns()).toBe(1)
    }))

  it.scopedLive("a snapshot of `true` costs one git status; its comparison one more (no cat-file, no git config)", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "tracked.txt": "a\n" })
      const counting = countingGit()
      yield* around(repo, "true", { git: counting.git })
      expect(counting.spawns()).toBe(2)
    }))

  it.scopedLive("a clean filter a command wrote into the repository's config is never run by our git", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "f.txt": "a\n" })
      const marker = path.join(repo, "..", `filter-ran-${path.basename(repo)}`)
      // What a sandboxed command in the workspace profile could do: our comparison runs unsandboxed.
      const changes = yield* around(
        repo,
        `git config filter.x.clean 'sh -c "touch ${marker}; cat"' && git config filter.x.process 'sh -c "touch ${marker}"' && echo '* filter=x' > .gitattributes && sleep 0.01 && touch f.txt`
      )
      // A touched file (same size, new mtime) is the one git must hash, through the filter.
      expect(fs.existsSync(marker)).toBe(false)
      expect(changes.files.map((f) => path.basename(f.path))).toContain(".gitattributes")
    }))

  it.scopedLive("a filter behind an include (which we do not parse) is found by git itself and switched off too", () =>
    Effect.gen(function*() {
      const repo = initRepo(yield* tempDir(), { "f.txt": "a\n" })
      const marker = path.join(repo, "..", `include-filter-ran-${path.basename(repo)}`)
      const counting = countingGit()
      const changes = yield* around(
        repo,
        `git config -f .git/extra filter.y.clean 'sh -c "touch ${marker}; cat"' && git config include.path extra && echo '* filter=y' > .gitattributes && sleep 0.01 && touch f.txt`,
        { git: counting.git }
      )
      expect(fs.existsSync(marker)).toBe(false)
      expect(changes.files.map((f) => path.basename(f.path))).toContain(".gitattributes")
    }))
})

describe("GitFilters.filterSections", () => {
  it("finds every spelling of a filter section, quoted names with escapes included", () => {
    const text = '[core]\n\tbare = false\n[filter "lfs"]\n\tclean = x\n[Filter "a b\\"c"] clean = y\n[filter.old]\n; [filter "commented"]\n'
    expect([...GitFilters.filterSections(text)].sort()).toEqual(['a b"c', "commented", "lfs", "old"])
  })
})
