/** Background tasks: start, events replay, read cursor, kill, the live-task limit, kill on session close. */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { describe, expect, it } from "@effect/vitest"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import { containmentModes, livingWith, parseOk, run, survivorsOf, token } from "./helpers.js"

for (const { mode, skip } of containmentModes) {
const bash = Effect.provide(Bash, BashLive.layer({ containment: mode }))

describe.skipIf(skip !== undefined)(`background tasks (${mode}${skip === undefined ? "" : `: skipped, ${skip}`})`, () => {
  it.scopedLive("an instant failure is reported inline with its exit", () =>
    Effect.gen(function*() {
      const s = yield* (yield* bash).session({ cwd: "/tmp" })
      const t0 = Date.now()
      const task = yield* s.start({ command: "no-such-command-xyz", run_in_background: true })
      expect(Date.now() - t0).toBeLessThan(5000)
      const parts = parseOk(task.started.text)
      expect(parts.end).toMatchObject({ _tag: "Exited", code: 127 })
      expect(parts.output).toContain("no-such-command-xyz")
      expect(task.info.id).toBe("bg-1")
      // Events still replay everything, then Finished with the same result.
      const events = Chunk.toArray(yield* Stream.runCollect(task.events))
      expect(events.at(-1)).toEqual({ _tag: "Finished", result: task.started })
    }))

  it.scopedLive("a long task starts, is listed, read with a cursor, killed, and its events replay from the start", () =>
    Effect.gen(function*() {
      const s = yield* (yield* bash).session({ cwd: "/tmp" })
      const tok = token()
      const task = yield* s.start({ command: `echo one; sleep 2.5; echo two; cd /; sleep 100.${tok}` })
      const parts = parseOk(task.started.text)
      expect(parts.end).toMatchObject({ _tag: "BackgroundStarted", taskId: task.info.id })
      expect(task.started.text).toContain(`[background task ${task.info.id} started]`)
      expect(parts.output).toContain("one\n")
      expect(livingWith(tok).length).toBeGreaterThan(0)

      const listed = yield* s.list
      expect(listed.map((t) => t.id)).toEqual([task.info.id])
      expect(listed[0]!.result).toBeUndefined()

      // The start consumed the first window; "two" comes later and is read once.
      expect((yield* s.read(task.info.id)).output).toBe("")
      let seen = ""
      const deadline = Date.now() + 10_000
      while (!seen.includes("two") && Date.now() < deadline) {
        const out = yield* s.read(task.info.id)
        expect(out.running).toBe(true)
        expect(out.output).not.toContain("one")
        seen += out.output
        yield* Effect.sleep("100 millis")
      }
      expect(seen).toBe("two\n")
      expect((yield* s.read(task.info.id)).output).toBe("")

      // Background tasks never move the session cwd.
      expect(yield* s.cwd).toBe("/tmp")

      const killed = yield* s.kill(task.info.id)
      const end = parseOk(killed.result!.text).end
      expect(end._tag).toBe("Signaled")
      expect(yield* survivorsOf(tok)).toEqual([])
      expect((yield* s.read(task.info.id)).running).toBe(false)

      const events = Chunk.toArray(yield* Stream.runCollect(task.events))
      const output = events.flatMap((e) => e._tag === "Output" ? [e.data] : []).join("")
      expect(output).toBe("one\ntwo\n")
      expect(events.at(-1)).toEqual({ _tag: "Finished", result: killed.result })

      const missing = yield* s.read("bg-99").pipe(Effect.flip)
      expect(missing.reason).toBe("TaskNotFound")
    }))

  it.live("at most 16 live tasks; all are killed when the session scope closes", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const tok = token()
      const s = yield* (yield* bash).session({ cwd: "/tmp" }).pipe(Scope.extend(scope))
      // Concurrent starts must not slip past the limit.
      const results = yield* Effect.all(
        Array.from({ length: 18 }, () => Effect.either(s.start({ command: `sleep 100.${tok}` }))),
        { concurrency: "unbounded" }
      )
      const started = results.flatMap((r) => r._tag === "Right" ? [r.right] : [])
      const refused = results.flatMap((r) => r._tag === "Left" ? [r.left] : [])
      expect(started.length).toBe(16)
      expect(refused.map((e) => e.reason)).toEqual(["TooManyTasks", "TooManyTasks"])
      expect(livingWith(tok).length).toBeGreaterThanOrEqual(16)

      // A finished task frees its slot.
      yield* s.kill(started[0]!.info.id)
      const another = yield* s.start({ command: `sleep 100.${tok}` })

      // A reader of a task's events is not left hanging when the session closes.
      const reader = yield* Stream.runCollect(another.events).pipe(Effect.fork)
      const t0 = Date.now()
      yield* Scope.close(scope, Exit.void)
      expect(Date.now() - t0).toBeLessThan(15_000)
      expect(yield* survivorsOf(tok)).toEqual([])
      const events = Chunk.toArray(yield* reader.await.pipe(Effect.flatten))
      const last = events.at(-1)
      expect(last?._tag).toBe("Finished")
      if (last?._tag === "Finished") expect(parseOk(last.result.text).end._tag).toBe("Signaled")
    }))

  it.scopedLive("a background task and a foreground call of the same session do not share the cwd", () =>
    Effect.gen(function*() {
      const s = yield* (yield* bash).session({ cwd: "/tmp" })
      const task = yield* s.start({ command: "cd / && pwd" })
      expect(parseOk(task.started.text).output).toBe("/\n")
      expect((yield* run(s, { command: "pwd" })).parts.output).toBe("/tmp\n")
    }))
})
}
