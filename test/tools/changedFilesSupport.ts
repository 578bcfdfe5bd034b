/** Temporary git repositories and a counting git runner for the changed-files tests. */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ChangedFiles from "../../src/Tools/Bash/ChangedFiles.js"
import { type Git, live } from "../../src/Tools/Bash/Git.js"

/** A fresh directory (real path, so absolute paths compare), removed when the scope closes. */
export const tempDir = (prefix = "dsh-acp-diffs-"): Effect.Effect<string, never, import("effect/Scope").Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

export const git = (cwd: string, ...args: Array<string>): string =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } })

/** Writes `files` (relative path → content), commits them, and returns the repository's root. */
export const initRepo = (dir: string, files: Record<string, string> = {}): string => {
  git(dir, "init", "-q")
  // CI has no global identity; a global signing setup must not apply either.
  git(dir, "config", "user.email", "test@example.com")
  git(dir, "config", "user.name", "test")
  git(dir, "config", "commit.gpgsign", "false")
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true })
    fs.writeFileSync(path.join(dir, name), content)
  }
  git(dir, "add", "-A")
  git(dir, "commit", "-q", "--allow-empty", "-m", "initial")
  return dir
}

export const bash = (cwd: string, command: string): void => {
  execFileSync("bash", ["--noprofile", "--norc", "-c", command], { cwd, stdio: ["ignore", "ignore", "inherit"] })
}

/** The real git, counting its spawns. */
export const countingGit = (): { readonly git: Git; readonly spawns: () => number } => {
  let n = 0
  return {
    git: { run: (root, args, options) => Effect.suspend(() => (n++, live.run(root, args, options))) },
    spawns: () => n
  }
}

/** Snapshot in `cwd`, run `command` (a bash script, or any effect), then the changes. */
export const around = (
  cwd: string,
  command: string | Effect.Effect<void>,
  options: ChangedFiles.Options = {}
): Effect.Effect<ChangedFiles.FileChanges, unknown> =>
  Effect.gen(function*() {
    const before = yield* ChangedFiles.snapshot(cwd, options)
    if (Option.isNone(before)) throw new Error(`no snapshot in ${cwd}`)
    if (typeof command === "string") bash(cwd, command)
    else yield* command
    return yield* ChangedFiles.changes(before.value, options)
  })

/** The one change, or a failure naming what came instead. */
export const only = (changes: ChangedFiles.FileChanges): ChangedFiles.FileChange => {
  if (changes.files.length !== 1 || changes.omitted !== 0) throw new Error(`expected one change, got ${JSON.stringify(changes)}`)
  return changes.files[0]!
}
