/** An embedder's tool that throws still gets a card and gives the model a failed result; the session goes on. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Intent from "../../src/Presentation/Intent.js"
import * as Tool from "../../src/Tools/Tool.js"
import { call, finish, say, toolResults } from "../support/scriptedModel.js"
import { open, tags, turn } from "./support.js"

const Broken = Tool.make({
  name: "Broken",
  description: "Throws everywhere.",
  parameters: Schema.Struct({ how: Schema.String }),
  requiresPermission: () => false,
  presentCall: ({ how }) => {
    if (how === "present") throw new Error("presentCall exploded")
    return Intent.GenericCall.make({ title: "Broken", kind: "other" })
  },
  presentResult: () => {
    throw new Error("presentResult exploded")
  },
  handle: ({ how }) => (how === "handle" ? Effect.die(new Error("handle exploded")) : Effect.succeed({ text: "fine", isFailure: false }))
})

describe("ModelHarness: a tool that throws", () => {
  it.scopedLive("presentCall, handle and presentResult throwing: cards close, the model gets failed results, the next turn works", () =>
    Effect.gen(function*() {
      const { session, model } = yield* open([
        [...call("b1", "Broken", { how: "present" }), ...call("b2", "Broken", { how: "handle" }), finish("tool-calls")],
        [...say("Saw the failures."), finish("stop")],
        [...say("Still here."), finish("stop")]
      ], { harness: { tools: Tool.toolset(Broken) } })
      const first = yield* turn(session, "break it")
      expect(tags(first)).toEqual([
        "ToolCallStarted", "ToolCallCompleted", "ToolCallStarted", "ToolCallCompleted", "AgentText", "TurnEnded"
      ])
      const completed = first.filter((e) => e._tag === "ToolCallCompleted")
      for (const c of completed) expect(c._tag === "ToolCallCompleted" && Intent.statusOf(c.presentation)).toBe("failed")
      const results = toolResults(model.requests[1]!)
      expect(results.map((r) => [r.id, r.isFailure])).toEqual([["b1", false], ["b2", true]])
      expect(String(results[1]!.result)).toContain("handle exploded")
      const second = yield* turn(session, "again")
      expect(tags(second)).toEqual(["AgentText", "TurnEnded"])
    }))
})
