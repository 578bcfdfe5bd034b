/** The model harness shows the files a Bash call changed on its card; the model's result text is unchanged. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { join } from "node:path"
import { bashCall, finish, say, toolResults } from "../support/scriptedModel.js"
import { open, tags, turn } from "./support.js"

const INIT = "git init -q && git -c user.email=t@example.com -c user.name=T commit -q --allow-empty -m init"

describe("ModelHarness: changed files", () => {
  it.scopedLive("a call in a git work tree: its card gets the diff after its end; the model gets only the result text", () =>
    Effect.gen(function*() {
      const { session, model, cwd } = yield* open([
        [...bashCall("c1", { command: INIT }), finish("tool-calls")],
        [...bashCall("c2", { command: "echo x > new.txt" }), finish("tool-calls")],
        [...say("Done."), finish("stop")]
      ], { harness: { approveAll: true } })
      const events = yield* turn(session, "make a file")
      expect(tags(events).filter((t) => t.startsWith("ToolCall"))).toEqual([
        "ToolCallStarted", "ToolCallCompleted", // the repository did not exist before c1: nothing to compare
        "ToolCallStarted", "ToolCallCompleted", "ToolCallFilesChanged"
      ])
      const changed = events.find((e) => e._tag === "ToolCallFilesChanged")
      expect(changed).toMatchObject({
        callId: "c2",
        changed: { diffs: [{ path: join(cwd, "new.txt"), oldText: null, newText: "x\n" }], notes: [], locations: [{ path: join(cwd, "new.txt") }] }
      })
      expect(toolResults(model.requests[2]!).at(-1)).toMatchObject({ id: "c2", result: "[exit code: 0]", isFailure: false })
    }))
})
