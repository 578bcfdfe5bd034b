/**
 * The few `git` processes the changed-files display needs, and finding a work tree without them.
 *
 * These are not bash calls: `git` is spawned directly (no shell, no process group, no sandbox),
 * with an environment that keeps it from prompting (`GIT_TERMINAL_PROMPT=0`), from taking the
 * index lock for its opportunistic index refresh (`GIT_OPTIONAL_LOCKS=0`: a snapshot taken while
 * the user runs `git commit` must not make that commit fail), and from translating anything
 * (`LC_ALL=C`). Variables that would point git at another repository than the one found from the
 * cwd (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, …) are dropped: we pass `-C <root>` and want
 * git to discover exactly that work tree.
 */
import * as cp from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

export class GitError extends Data.TaggedError("GitError")<{
  /** The work tree git ran in. */
  readonly root: string
  readonly args: ReadonlyArray<string>
  readonly message: string
}> {}

export interface RunOptions {
  /** Written to git's stdin, then stdin is closed. Without it stdin is /dev/null. */
  readonly stdin?: Buffer
  /** Stdout beyond this many bytes kills git and fails: a bound on what we hold in memory. */
  readonly maxBytes?: number
}

/** Runs `git -C <root> <args>` and yields its stdout. Injectable, so tests can count spawns. */
export interface Git {
  readonly run: (root: string, args: ReadonlyArray<string>, options?: RunOptions) => Effect.Effect<Buffer, GitError>
}

const DEFAULT_MAX_BYTES = 64 * 1024 * 1024

/** Variables that would redirect git away from the work tree we found. */
const REDIRECTING = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_COMMON_DIR",
  "GIT_NAMESPACE",
  "GIT_CEILING_DIRECTORIES",
  "GIT_DISCOVERY_ACROSS_FILESYSTEM"
]

export const gitEnv = (base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...base }
  for (const name of REDIRECTING) delete env[name]
  env.GIT_TERMINAL_PROMPT = "0"
  env.GIT_OPTIONAL_LOCKS = "0"
  // A partial clone would fetch a missing object (running ssh, credential helpers): never for a display.
  env.GIT_NO_LAZY_FETCH = "1"
  env.LC_ALL = "C"
  return env
}

/** The real `git` on PATH. Interrupting the effect kills the process. */
export const live: Git = {
  run: (root, args, options = {}) =>
    Effect.async<Buffer, GitError>((resume) => {
      const argv = ["-C", root, ...args]
      const fail = (message: string) => resume(Effect.fail(new GitError({ root, args, message })))
      const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES
      let child: cp.ChildProcess
      try {
        child = cp.spawn("git", argv, {
          env: gitEnv(),
          stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
          windowsHide: true
        })
      } catch (e) {
        fail(String(e))
        return
      }
      const out: Array<Buffer> = []
      let outBytes = 0
      let err = ""
      let done = false
      const finish = (effect: Effect.Effect<Buffer, GitError>) => {
        if (done) return
        done = true
        resume(effect)
      }
      child.stdout!.on("data", (chunk: Buffer) => {
        outBytes += chunk.length
        if (outBytes > maxBytes) {
          child.kill("SIGKILL")
          finish(Effect.fail(new GitError({ root, args, message: `output over ${maxBytes} bytes` })))
        } else out.push(chunk)
      })
      child.stderr!.setEncoding("utf8")
      child.stderr!.on("data", (chunk: string) => {
        if (err.length < 4096) err += chunk
      })
      child.on("error", (e) => finish(Effect.fail(new GitError({ root, args, message: e.message }))))
      // `close`, not `exit`: stdout must be fully read before we parse it.
      child.on("close", (code, signal) =>
        finish(
          code === 0
            ? Effect.succeed(Buffer.concat(out, outBytes))
            : Effect.fail(new GitError({ root, args, message: `exit ${code ?? signal}: ${err.trim().split("\n")[0] ?? ""}` }))
        )
      )
      if (options.stdin !== undefined) {
        // git may exit before reading all of stdin (a bad object name): EPIPE is its exit status's business.
        child.stdin!.on("error", () => {})
        child.stdin!.end(options.stdin)
      }
      return Effect.sync(() => {
        done = true
        child.kill("SIGKILL")
      })
    })
}

/**
 * The top of the work tree holding `cwd`: the nearest ancestor (or `cwd` itself) with a `.git`
 * directory or file (a linked worktree or a submodule has a file). Only `stat` calls, never a
 * process: outside a repository the feature must cost nothing. A `.git` that git then rejects
 * (a broken or foreign-owned repository) is found here and fails later, at the first `git status`.
 */
export const findWorkTree = (cwd: string): Effect.Effect<Option.Option<string>> =>
  Effect.sync(() => {
    let dir = path.resolve(cwd)
    for (;;) {
      const dotGit = fs.statSync(path.join(dir, ".git"), { throwIfNoEntry: false })
      if (dotGit !== undefined && (dotGit.isDirectory() || dotGit.isFile())) return Option.some(dir)
      const parent = path.dirname(dir)
      if (parent === dir) return Option.none()
      dir = parent
    }
  }).pipe(Effect.catchAllDefect(() => Effect.succeed(Option.none<string>())))

/**
 * The contents of blobs by object id, each at most `limit` bytes (a larger one is reported by its
 * size only): `cat-file --batch-check` learns the sizes, then `cat-file --batch` reads only the
 * small ones, so a huge blob is never held. Object ids, not `<rev>:<path>`: paths never have to go
 * through git's newline-delimited batch input.
 */
export const readBlobs = (
  git: Git,
  root: string,
  oids: ReadonlyArray<string>,
  limit: number
): Effect.Effect<Map<string, { readonly size: number; readonly bytes?: Buffer }>, GitError> =>
  Effect.gen(function*() {
    const found = new Map<string, { readonly size: number; readonly bytes?: Buffer }>()
    const unique = [...new Set(oids)]
    if (unique.length === 0) return found
    const check = yield* git.run(root, ["cat-file", "--batch-check"], { stdin: Buffer.from(unique.join("\n") + "\n") })
    const small: Array<string> = []
    for (const line of check.toString("latin1").split("\n")) {
      const [oid, type, size] = line.split(" ")
      if (oid === undefined || type !== "blob" || size === undefined) continue
      const n = Number(size)
      if (n <= limit) small.push(oid)
      else found.set(oid, { size: n })
    }
    if (small.length === 0) return found
    const out = yield* git.run(root, ["cat-file", "--batch"], { stdin: Buffer.from(small.join("\n") + "\n") })
    let i = 0
    while (i < out.length) {
      const eol = out.indexOf(0x0a, i)
      if (eol === -1) break
      const [oid, type, size] = out.toString("latin1", i, eol).split(" ")
      if (oid === undefined || type === undefined || size === undefined) break
      const n = Number(size)
      found.set(oid, { size: n, bytes: Buffer.from(out.subarray(eol + 1, eol + 1 + n)) })
      i = eol + 1 + n + 1
    }
    return found
  })
