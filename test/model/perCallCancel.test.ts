/**
 * One call's own Stop (`ToolCallStarted.cancel`, what ACP v2's `terminal/cancel` reaches) in the
 * model harness: the command gets the kill sequence, the model receives its `[killed by signal]`
 * result, and the turn goes on to the model's next step — unlike the turn's cancel.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { bashCall, finish, say, toolResults } from "../support/scriptedModel.js"
import { agentText, lastEvent, open, processesRunning, turn } from "./support.js"

describe("ModelHarness per-call cancel", () => {
  it.scopedLive("stops that command alone; the model gets the signal result and the turn continues", () =>
    Effect.gen(function*() {
      const sleep = `sleep 30.${process.pid}77`
      const { session, model } = yield* open([
        [...bashCall("c1", { command: sleep }), finish("tool-calls")],
        [...say("The command was stopped."), finish("stop")]
      ], { harness: { approveAll: true } })
      const events = yield* turn(session, "run a long sleep", (event) =>
        event._tag === "ToolCallStarted" && event.cancel !== undefined
          ? Effect.suspend(() => (processesRunning(sleep).length > 0 ? Effect.void : Effect.fail("not yet"))).pipe(
            Effect.retry(Schedule.spaced("20 millis")),
            Effect.zipRight(event.cancel),
            Effect.forkDaemon,
            Effect.asVoid
          )
          : Effect.void)
      const [result] = toolResults(model.requests[1]!)
      expect(result!.result).toMatch(/\[killed by signal: SIG(TERM|KILL)\]$/)
      expect(agentText(events)).toBe("The command was stopped.")
      expect(lastEvent(events)).toMatchObject({ _tag: "TurnEnded", stopReason: "end_turn" })
      expect(processesRunning(sleep)).toEqual([])
    }))
})
