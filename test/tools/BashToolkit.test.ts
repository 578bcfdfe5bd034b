/** The bash tools as an `@effect/ai` toolkit with real handlers: what an Effect agent merges into its own. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdirSync, mkdtempSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as BashLive from "../../src/Bash/BashLive.js"
import * as StatusLines from "../../src/Bash/StatusLines.js"
import * as BashToolkit from "../../src/Tools/Bash/BashToolkit.js"

describe("BashToolkit", () => {
  it.scopedLive("runs commands on one shell (a cd persists), starts, reads and kills a background task", () =>
    Effect.gen(function*() {
      const cwd = realpathSync(mkdtempSync(join(tmpdir(), "dsh-toolkit-")))
      mkdirSync(join(cwd, "sub"))
      // Built in the test's scope: the shell lives as long as the layer, so the layer must outlive the calls.
      const context = yield* Layer.build(BashToolkit.layer({ cwd }).pipe(Layer.provide(BashLive.layer({ containment: "process-group" }))))
      const toolkit = yield* BashToolkit.BashToolkit.pipe(Effect.provide(context))
      const first = yield* toolkit.handle("Bash", { command: "cd sub && echo moved" })
      expect(first.result).toBe("moved\n[exit code: 0]")
      const second = yield* toolkit.handle("Bash", { command: "pwd; exit 4" })
      expect(second.result).toBe(`${join(cwd, "sub")}\n[exit code: 4]`)

      const started = yield* toolkit.handle("Bash", { command: "echo up; sleep 30", run_in_background: true })
      expect(String(started.result)).toMatch(/\[background task bg-1 started\]$/)
      const read = yield* toolkit.handle("BashOutput", { task_id: "bg-1" })
      expect(String(read.result)).toContain("[background task bg-1 running]")
      const killed = yield* toolkit.handle("KillBash", { task_id: "bg-1" })
      expect(String(killed.result)).toBe("Killed bg-1.\n[killed by signal: SIGTERM]")
      const missing = yield* toolkit.handle("KillBash", { task_id: "bg-9" })
      expect(String(missing.result)).toContain("no background task bg-9")
      expect(StatusLines.parse(String(second.result))._tag).toBe("Right")
    }))
})
