/** Finished background tasks are kept for `list` and `read` up to a bounded history (issue #11). */
import * as Effect from "effect/Effect"
import { describe, expect, it } from "@effect/vitest"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import { FINISHED_KEPT } from "../../src/Bash/Tasks.js"

describe("background task history", () => {
  it.scopedLive("keeps the last finished tasks and forgets older ones", () =>
    Effect.gen(function*() {
      const s = yield* Effect.flatMap(Bash, (bash) => bash.session({ cwd: "/tmp" })).pipe(
        Effect.provide(BashLive.layer({ containment: "process-group" }))
      )
      const total = FINISHED_KEPT + 3
      for (let i = 0; i < total; i++) {
        yield* s.start({ command: "true" })
      }
      // A kill waits for the task's end: the last ones are surely finished (and so evicted the oldest).
      for (let i = total - 4; i <= total; i++) yield* s.kill(`bg-${i}`)
      const listed = yield* s.list
      expect(listed).toHaveLength(FINISHED_KEPT)
      expect(listed[0]!.id).toBe("bg-4")
      expect((yield* Effect.flip(s.read("bg-1"))).reason).toBe("TaskNotFound")
      expect((yield* s.read(`bg-${total}`)).running).toBe(false)
    }), 60_000)
})
