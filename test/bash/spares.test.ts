/**
 * Calls run in a process started ahead of them (SparePool, Prewarm) once the session has been idle,
 * and such a call is the same as a freshly spawned one: environment, cwd, `$0`, its own process
 * group, its exit status. The spare's age is read from /proc, not from a clock in the test.
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "@effect/vitest"
import { Bash, type BashSession } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import { containmentModes, run } from "./helpers.js"

/** Clock ticks since boot, as /proc/<pid>/stat's start time counts them (USER_HZ is 100 on Linux). */
const TICKS_PER_SECOND = 100
const uptimeTicks = (): number => Math.floor(Number(fs.readFileSync("/proc/uptime", "utf8").split(" ")[0]) * TICKS_PER_SECOND)

/** Children of this process that are spares waiting for a call (a group spare's argv[0] is `dsh-acp-spare`). */
const waitingSpares = (): Array<number> =>
  fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      return ppid === process.pid && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("dsh-acp-spare")
    } catch {
      return false
    }
  })

const idle = Effect.sleep("300 millis")

/** The command prints its pid's start time (ticks since boot), its group and session ids, `$0`, the cwd and the environment. */
const PROBE = `set -- $(cut -d' ' -f5,6,22 /proc/$$/stat); echo "group=$1 session=$2 start=$3 pid=$$ zero=$0 pwd=$PWD"; pwd -P; env -0 | sort -z | tr '\\0' '\\n' | grep -v '^_='`

const probe = (s: BashSession) =>
  Effect.gen(function*() {
    const sentAt = uptimeTicks()
    const r = yield* run(s, { command: PROBE })
    const [head = "", cwd, ...env] = r.output.split("\n")
    const field = (name: string) => new RegExp(`${name}=(\\S*)`).exec(head)?.[1]
    return { sentAt, start: Number(field("start")), group: field("group"), session: field("session"), pid: field("pid"), zero: field("zero"), pwd: field("pwd"), cwd, env: env.join("\n"), exit: r.parts.end }
  })

describe("spares: calls in a process started ahead", () => {
  it.scopedLive("process-group: after an idle stretch the call's bash is a spare's, and it is the same as a fresh spawn", () =>
    Effect.gen(function*() {
      const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: "process-group" }))
      const s = yield* bash.session({ cwd: "/tmp" })
      // The first call comes before any spare exists (the pool waits for idle time): a fresh spawn.
      const fresh = yield* probe(s)
      expect(fresh.start).toBeGreaterThanOrEqual(fresh.sentAt)
      yield* idle
      expect(waitingSpares().length).toBe(2)
      const spare = yield* probe(s)
      // Started well before the call was sent: the spare's process became the call's bash by exec.
      expect(spare.start).toBeLessThan(spare.sentAt - 10)
      for (const r of [fresh, spare]) {
        expect(r.group).toBe(r.pid)
        expect(r.session).toBe(r.pid)
        expect(r.zero).toBe("bash")
        expect(r.pwd).toBe("/tmp")
        expect(r.cwd).toBe(fs.realpathSync("/tmp"))
        expect(r.exit).toEqual({ _tag: "Exited", code: 0 })
      }
      expect(spare.env).toBe(fresh.env)
      // A `cd` moves the next call, which again runs in a spare.
      yield* run(s, { command: "cd /usr" })
      yield* idle
      const moved = yield* probe(s)
      expect(moved.start).toBeLessThan(moved.sentAt - 10)
      expect(moved.cwd).toBe("/usr")
      expect(moved.pwd).toBe("/usr")
      // The exit status and a signal death come through as from a fresh spawn.
      yield* idle
      expect((yield* run(s, { command: "exit 7" })).parts.end).toEqual({ _tag: "Exited", code: 7 })
      yield* idle
      expect((yield* run(s, { command: "kill -TERM $$" })).parts.end).toEqual({ _tag: "Signaled", signal: "SIGTERM" })
    }))

  for (const { mode, skip } of containmentModes) {
    it.scopedLive.skipIf(skip !== undefined)(`${mode}: a call after an idle stretch sees what a fresh spawn sees`, () =>
      Effect.gen(function*() {
        const saved = process.env.OLDPWD
        // Names the waiting shells could use for themselves: the command must see them as they are.
        process.env.c = "agent-c"
        process.env.d = "agent-d"
        yield* Effect.addFinalizer(() => Effect.sync(() => {
          delete process.env.c
          delete process.env.d
          saved === undefined ? delete process.env.OLDPWD : void (process.env.OLDPWD = saved)
        }))
        for (const oldpwd of ["/var", undefined]) {
          if (oldpwd === undefined) delete process.env.OLDPWD
          else process.env.OLDPWD = oldpwd
          const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: mode }))
          const s = yield* bash.session({ cwd: "/tmp" })
          const fresh = yield* probe(s)
          yield* idle
          const spare = yield* probe(s)
          expect(spare.env).toBe(fresh.env)
          expect(fresh.env.includes("OLDPWD=")).toBe(oldpwd !== undefined)
          expect(spare.env.split("\n")).toEqual(expect.arrayContaining(["c=agent-c", "d=agent-d"]))
          expect([spare.zero, spare.pwd, spare.cwd]).toEqual([fresh.zero, fresh.pwd, fresh.cwd])
        }
      }))
  }

  it.scopedLive("process-group: calls started together (more than the spares) leave the pool at two, not at their number", () =>
    Effect.gen(function*() {
      const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: "process-group" }))
      const s = yield* bash.session({ cwd: "/tmp" })
      yield* idle
      const results = yield* Effect.all(Array.from({ length: 5 }, () => run(s, { command: "sleep 0.2; echo done" })), { concurrency: "unbounded" })
      expect(results.map((r) => r.output)).toEqual(Array(5).fill("done\n"))
      yield* idle
      expect(waitingSpares().length).toBe(2)
    }))

  it.scopedLive("process-group: closing the session ends its waiting spares", () =>
    Effect.gen(function*() {
      const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: "process-group" }))
      yield* Effect.scoped(Effect.gen(function*() {
        yield* bash.session({ cwd: "/tmp" })
        yield* idle
        expect(waitingSpares().length).toBe(2)
      }))
      expect(waitingSpares()).toEqual([])
    }))

  for (const { mode, skip } of containmentModes) {
    it.scopedLive.skipIf(skip !== undefined)(`${mode}: calls back to back, each taking the last spare, all run and keep the cwd`, () =>
      Effect.gen(function*() {
        const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: mode }))
        const s = yield* bash.session({ cwd: "/tmp" })
        yield* idle
        for (let i = 0; i < 6; i++) {
          const r = yield* run(s, { command: `echo $((${i} * 2)); cd /${i % 2 === 0 ? "usr" : "etc"}` })
          expect(r.output).toBe(`${i * 2}\n`)
          expect(yield* s.cwd).toBe(i % 2 === 0 ? "/usr" : "/etc")
        }
      }))
  }
})
