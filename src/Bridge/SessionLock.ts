/**
 * Who holds a persisted session: a lock file next to its log, holding the holder's pid and that
 * process's start time. Two agents may run at once on different sessions; one session is written by
 * one process only. A lock whose holder is gone (the agent was killed) is stale and taken over: the
 * start time tells a dead holder from an unrelated process that reused its pid.
 */
import * as fs from "node:fs"

export interface Holder {
  readonly pid: number
  /** `/proc/<pid>/stat` start time (Linux); `undefined` where there is no /proc. */
  readonly start: string | undefined
}

const startTimeOf = (pid: number): string | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name is parenthesised and may hold spaces: fields start after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  } catch {
    return undefined
  }
}

const alive = (holder: Holder): boolean => {
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false
  }
  if (holder.start === undefined) return true
  const start = startTimeOf(holder.pid)
  return start === undefined || start === holder.start
}

const me = (): Holder => ({ pid: process.pid, start: startTimeOf(process.pid) })

const readText = (path: string): string | undefined => {
  try {
    return fs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

const readHolder = (path: string): Holder | undefined => {
  try {
    const parsed = JSON.parse(readText(path) ?? "") as { pid?: unknown; start?: unknown }
    return typeof parsed.pid === "number" && Number.isInteger(parsed.pid) && parsed.pid > 0
      ? { pid: parsed.pid, start: typeof parsed.start === "string" ? parsed.start : undefined }
      : undefined
  } catch {
    return undefined
  }
}

/** The live process other than this one that holds `path`, if any. */
export const heldBy = (path: string): Holder | undefined => {
  const holder = readHolder(path)
  return holder !== undefined && holder.pid !== process.pid && alive(holder) ? holder : undefined
}

/**
 * Takes the lock for this process. Returns the live holder instead when another process has it.
 * The lock appears whole or not at all (written aside, then hard-linked into place, which fails if
 * it exists), so of two agents racing for a free lock exactly one wins and none reads a half file.
 */
export const acquire = (path: string): Holder | undefined => {
  const aside = `${path}.${process.pid}.tmp`
  fs.writeFileSync(aside, JSON.stringify(me()), { mode: 0o600 })
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        fs.linkSync(aside, path)
        return undefined
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      }
      const before = readText(path)
      if (before === undefined) continue
      const holder = readHolder(path)
      if (holder !== undefined && holder.pid === process.pid) return undefined
      if (holder !== undefined && alive(holder)) return holder
      // Stale: its holder is gone. Removed only if unchanged, so a lock just taken by a racing agent stays.
      if (readText(path) === before) fs.rmSync(path, { force: true })
    }
    return readHolder(path) ?? { pid: 0, start: undefined }
  } finally {
    fs.rmSync(aside, { force: true })
  }
}

/** Gives the lock up, if this process holds it. */
export const release = (path: string): void => {
  if (readHolder(path)?.pid === process.pid) fs.rmSync(path, { force: true })
}
