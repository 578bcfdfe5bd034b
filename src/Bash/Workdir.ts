/** Where a call runs (the session cwd or its `workdir`), and whether it leaves the session elsewhere. */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { BashError, type RunRequest } from "./Bash.js"

const isDirectory = (dir: string): "ok" | "missing" | "notDirectory" => {
  try {
    return fs.statSync(dir).isDirectory() ? "ok" : "notDirectory"
  } catch {
    return "missing"
  }
}

/** The call ended in another directory than `dir`, where it started (`pwd -P` resolves symlinks). */
export const movedTo = (dir: string, finalCwd: string | undefined): boolean => {
  if (finalCwd === undefined || finalCwd === dir) return false
  try {
    return fs.realpathSync(dir) !== finalCwd
  } catch {
    return true
  }
}

/** A call's `workdir`; an empty one is no workdir (as `BashTool.callCwd` shows it: the session cwd, and a `cd` persists). */
export const workdirOf = (args: RunRequest): string | undefined => args.workdir === "" ? undefined : args.workdir

/** The directory a call runs in: the session cwd, or `workdir` resolved against it. */
export const resolveDir = (base: string, workdir: string | undefined): Effect.Effect<string, BashError> =>
  Effect.suspend(() => {
    const dir = workdir === undefined ? base : path.resolve(base, workdir)
    const state = isDirectory(dir)
    if (state === "ok") return Effect.succeed(dir)
    const what = workdir === undefined ? `the session directory ${dir}` : `workdir ${JSON.stringify(workdir)} (${dir})`
    return Effect.fail(
      new BashError({
        reason: "BadWorkdir",
        message: state === "missing" ? `${what} does not exist` : `${what} is not a directory`
      })
    )
  })
