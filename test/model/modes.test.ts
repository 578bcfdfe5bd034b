/**
 * The model harness's modes: Ask (full access, each command asks), Auto (workspace sandbox, no
 * asking), Read-only (no asking, nothing writable). A switch applies to the next command, and a
 * command the sandbox denies comes back to the model as its normal failure text.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs"
import { join } from "node:path"
import { sandboxProblem } from "../bash/helpers.js"
import { bashCall, finish, say, toolResults } from "../support/scriptedModel.js"
import { open, turn } from "./support.js"

describe.skipIf(sandboxProblem !== undefined)(`model harness modes${sandboxProblem === undefined ? "" : ` (skipped: ${sandboxProblem})`}`, () => {
  it.scopedLive("Ask asks and runs with full access; Auto runs sandboxed without asking; Read-only denies writes", () =>
    Effect.gen(function*() {
      const outside = realpathSync(mkdtempSync(join(existsSync("/var/tmp") ? "/var/tmp" : process.cwd(), "dsh-model-modes-")))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(outside, { recursive: true, force: true })))
      const { asked, cwd, model, session } = yield* open([
        [...bashCall("c1", { command: `touch ${outside}/ask` }), finish("tool-calls")],
        [...say("done"), finish("stop")],
        [...bashCall("c2", { command: `touch ${outside}/auto; touch inside` }), finish("tool-calls")],
        [...say("done"), finish("stop")],
        [...bashCall("c3", { command: "touch inside-2" }), finish("tool-calls")],
        [...say("done"), finish("stop")]
      ])
      const modes = session.modes!
      expect(modes.available.map((m) => m.id)).toEqual(["ask", "auto", "read-only"])
      expect(yield* modes.current).toBe("ask")

      yield* turn(session, "one")
      expect(asked.map((a) => a.callId)).toEqual(["c1"])
      expect(existsSync(join(outside, "ask"))).toBe(true)

      yield* modes.set("auto")
      yield* turn(session, "two")
      expect(asked.map((a) => a.callId)).toEqual(["c1"])
      expect(existsSync(join(outside, "auto"))).toBe(false)
      expect(existsSync(join(cwd, "inside"))).toBe(true)
      const auto = toolResults(model.requests[3]!).at(-1)
      expect(String(auto!.result)).toContain("Read-only file system")

      yield* modes.set("read-only")
      yield* turn(session, "three")
      expect(asked.map((a) => a.callId)).toEqual(["c1"])
      expect(existsSync(join(cwd, "inside-2"))).toBe(false)
      const readOnly = toolResults(model.requests[5]!).at(-1)
      expect(String(readOnly!.result)).toContain("Read-only file system")

      const unknown = yield* Effect.flip(modes.set("yolo"))
      expect(unknown._tag).toBe("UnknownMode")
      expect(yield* modes.current).toBe("read-only")
    }))
})
