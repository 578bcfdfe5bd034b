/**
 * Which processes are alive, read from /proc: how the containment tests find a command's process
 * group and check that nothing of it survives.
 */
import { readdirSync, readFileSync } from "node:fs"

/** The fields of /proc/PID/stat after the command name (which is parenthesised and may hold spaces). */
const statFields = (pid: string): Array<string> => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
}

const isDead = (fields: ReadonlyArray<string>) => fields[0] === "Z" || fields[0] === "X"

const cmdlineOf = (pid: string) => readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim()

const pids = () => readdirSync("/proc").filter((entry) => /^[0-9]+$/.test(entry))

/** Live (non-zombie) processes whose process group is `pgid`. */
export const processesInGroup = (pgid: number): Array<{ pid: number; cmdline: string }> => {
  const found: Array<{ pid: number; cmdline: string }> = []
  for (const pid of pids()) {
    try {
      const fields = statFields(pid)
      if (Number(fields[2]) !== pgid || isDead(fields)) continue
      found.push({ pid: Number(pid), cmdline: cmdlineOf(pid) })
    } catch {
      // the process ended while we looked
    }
  }
  return found
}

/** Live processes whose command line is exactly `cmdline` (argv joined by spaces), with their group. */
export const processesByCmdline = (cmdline: string): Array<{ pid: number; pgid: number }> => {
  const found: Array<{ pid: number; pgid: number }> = []
  for (const pid of pids()) {
    try {
      if (cmdlineOf(pid) !== cmdline) continue
      const fields = statFields(pid)
      if (isDead(fields)) continue
      found.push({ pid: Number(pid), pgid: Number(fields[2]) })
    } catch {
      // the process ended while we looked
    }
  }
  return found
}

/** Polls `check` every 20 ms until it returns a value other than `undefined`, or fails after `timeoutMs`. */
export const eventually = async <A>(what: string, check: () => A | undefined, timeoutMs = 10_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * A `sleep` of 100-odd seconds whose command line is unique to this test worker and `n`, so
 * `groupOf` finds this test's command and never another's (suites may run side by side).
 */
export const uniqueSleep = (n: number): string => `sleep 100.${process.pid}${String(n).padStart(3, "0")}`

/** Waits until a process runs `cmdline` and returns its process group (the command's bash). */
export const groupOf = (cmdline: string, timeoutMs?: number): Promise<number> =>
  eventually(`a process running \`${cmdline}\``, () => processesByCmdline(cmdline)[0]?.pgid, timeoutMs)

/** Waits until no process is left in group `pgid`; returns the survivors when it times out. */
export const groupGone = async (pgid: number, timeoutMs = 5_000): Promise<ReadonlyArray<string>> => {
  try {
    await eventually(`group ${pgid} to end`, () => (processesInGroup(pgid).length === 0 ? true : undefined), timeoutMs)
    return []
  } catch {
    return processesInGroup(pgid).map((p) => `${p.pid} ${p.cmdline}`)
  }
}
