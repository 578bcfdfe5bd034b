/**
 * The model harness's loop against a scripted model and real bash: what the user sees (events),
 * what the model is sent next (the recorded requests), and how each turn ends.
 */
import * as AiError from "@effect/ai/AiError"
import * as Tool from "@effect/ai/Tool"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { existsSync } from "node:fs"
import { join } from "node:path"
import * as StatusLines from "../../src/Bash/StatusLines.js"
import * as InvalidToolCall from "../../src/Model/InvalidToolCall.js"
import type { HarnessEvent } from "../../src/Harness/HarnessEvent.js"
import * as Intent from "../../src/Presentation/Intent.js"
import { bashCall, call, finish, lastUserText, type Part, say, think, toolResults } from "../support/scriptedModel.js"
import { agentText, lastEvent, open, processesRunning, tags, turn } from "./support.js"

const completed = (events: ReadonlyArray<HarnessEvent>, callId: string) => {
  const event = events.find((e) => e._tag === "ToolCallCompleted" && e.callId === callId)
  if (event?._tag !== "ToolCallCompleted") throw new Error(`no completion for ${callId}: ${JSON.stringify(tags(events))}`)
  const presentation = event.presentation
  // The status a card shows, and the exit of a terminal result.
  return { ...presentation, status: Intent.statusOf(presentation), exit: presentation._tag === "Terminal" ? presentation.exit : undefined }
}

describe("ModelHarness", () => {
  it.scopedLive("two steps: the model runs a command, gets its rendered result, answers", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const { session, model, cwd, asked } = yield* open([
        [...think("I should run it."), ...say("Running it."), ...bashCall("c1", { command: "echo hi; exit 3" }), finish("tool-calls")],
        [...say("It printed hi and exited with 3."), finish("stop")]
      ], { decide: (request) => Effect.sync(() => log.push(`ask ${request.callId}`)).pipe(Effect.as("allow_once" as const)) })
      const events = yield* turn(session, "run echo hi; exit 3", (event) => Effect.sync(() => void log.push(event._tag)))
      // The pending card reached the consumer before the permission request that names it.
      expect(log.slice(0, 4)).toEqual(["AgentThought", "AgentText", "ToolCallStarted", "ask c1"])

      expect(tags(events)).toEqual([
        "AgentThought", "AgentText", "ToolCallStarted", "ToolCallRunning", "ToolOutput", "ToolCallCompleted", "AgentText", "TurnEnded"
      ])
      const started = events[2]!
      expect(started._tag === "ToolCallStarted" && started).toMatchObject({
        callId: "c1",
        pending: true,
        presentation: { _tag: "Terminal", title: "echo hi; exit 3", kind: "execute", cwd }
      })
      expect(events[4]).toMatchObject({ _tag: "ToolOutput", callId: "c1", data: "hi\n" })
      expect(completed(events, "c1")).toMatchObject({ _tag: "Terminal", status: "failed", exit: { _tag: "Exited", code: 3 }, output: "hi\n" })
      expect(lastEvent(events)).toMatchObject({ _tag: "TurnEnded", stopReason: "end_turn" })
      expect(asked.map((a) => a.callId)).toEqual(["c1"])

      // The first request offers the three tools with their real JSON Schemas and the system prompt.
      const first = model.requests[0]!
      expect(first.tools.map((t) => t.name)).toEqual(["Bash", "BashOutput", "KillBash"])
      const bashSchema = Tool.getJsonSchema(first.tools[0] as Tool.Any as never) as { required?: Array<string>; properties?: Record<string, unknown> }
      expect(bashSchema.required).toEqual(["command"])
      expect(Object.keys(bashSchema.properties ?? {})).toContain("run_in_background")
      expect(first.prompt.content[0]).toMatchObject({ role: "system" })
      expect(JSON.stringify(first.prompt.content[0])).toContain(cwd)
      expect(lastUserText(first)).toBe("run echo hi; exit 3")

      // The second request carries the assistant's call and the rendered result.
      const second = model.requests[1]!
      expect(model.requests).toHaveLength(2)
      const [result] = toolResults(second)
      expect(result).toMatchObject({ id: "c1", name: "Bash", isFailure: false })
      expect(result!.result).toBe("hi\n[exit code: 3]")
      const assistant = second.prompt.content.find((m) => m.role === "assistant")
      expect(assistant?.content.map((p) => p.type)).toEqual(["reasoning", "text", "tool-call"])
    }))

  it.scopedLive("a rejected command never runs and the model hears why; allow_always is remembered", () =>
    Effect.gen(function*() {
      let answers = ["reject", "allow_always"] as Array<"reject" | "allow_always">
      const { session, model, cwd, asked } = yield* open([
        [...bashCall("c1", { command: "touch rejected-marker" }), finish("tool-calls")],
        [...bashCall("c2", { command: "touch allowed-1" }), finish("tool-calls")],
        [...bashCall("c3", { command: "touch allowed-2" }), finish("tool-calls")],
        [...say("ok"), finish("stop")]
      ], { decide: () => Effect.sync(() => answers.shift() ?? "reject") })
      const events = yield* turn(session, "touch things")

      expect(existsSync(join(cwd, "rejected-marker"))).toBe(false)
      expect(existsSync(join(cwd, "allowed-1"))).toBe(true)
      expect(existsSync(join(cwd, "allowed-2"))).toBe(true)
      expect(asked.map((a) => a.callId)).toEqual(["c1", "c2"])
      expect(completed(events, "c1").status).toBe("failed")
      expect(events.some((e) => e._tag === "ToolCallRunning" && e.callId === "c1")).toBe(false)
      // After allow_always the next card opens running, not pending.
      expect(events.find((e) => e._tag === "ToolCallStarted" && e.callId === "c3")).toMatchObject({ pending: false })
      const [rejected] = toolResults(model.requests[1]!)
      expect(rejected).toMatchObject({ id: "c1", isFailure: true })
      expect(String(rejected!.result)).toMatch(/rejected/)
      expect(lastEvent(events)).toMatchObject({ stopReason: "end_turn" })
      answers = []
    }))

  it.scopedLive("invalid calls (bad arguments, unknown tool, non-object params) come back as failed results the model corrects", () =>
    Effect.gen(function*() {
      const { session, model } = yield* open([
        // A bad argument decodes leniently; the unknown name fails the stream's decoder, whose chunk is recovered.
        [...call("c1", "Bash", { cmd: "ls" }), ...call("c2", "Nope", { x: 1 }), finish("tool-calls")],
        [...call("c3", "Bash", "echo not-an-object"), finish("tool-calls")],
        [...bashCall("c4", { command: "echo fixed" }), finish("tool-calls")],
        [...say("done"), finish("stop")]
      ], { harness: { approveAll: true } })
      const events = yield* turn(session, "go")

      expect(model.requests).toHaveLength(4)
      const first = toolResults(model.requests[1]!)
      expect(first.map((r) => [r.id, r.isFailure])).toEqual([["c1", true], ["c2", true]])
      expect(String(first[0]!.result)).toMatch(/Invalid arguments for Bash[\s\S]*command/)
      expect(String(first[1]!.result)).toMatch(/Unknown tool "Nope"[\s\S]*Bash, BashOutput, KillBash/)
      const second = toolResults(model.requests[2]!).filter((r) => r.id === "c3")
      expect(second).toMatchObject([{ isFailure: true }])
      expect(String(second[0]!.result)).toMatch(/Invalid arguments for Bash/)
      const third = toolResults(model.requests[3]!).filter((r) => r.id === "c4")
      expect(third).toMatchObject([{ isFailure: false, result: "fixed\n[exit code: 0]" }])
      // Each bad call still got a card, closed as failed.
      for (const id of ["c1", "c2", "c3"]) expect(completed(events, id).status).toBe("failed")
      expect(lastEvent(events)).toMatchObject({ stopReason: "end_turn" })
    }))

  it.scopedLive("a call the provider found invalid (an InvalidToolCall error part) goes back to the model, the turn goes on", () =>
    Effect.gen(function*() {
      const invalid = InvalidToolCall.make({
        id: "c1",
        name: "Bash",
        arguments: "{\"command\": \"ls",
        reason: "invalid-json",
        message: "The arguments of Bash are not valid JSON: send an object such as {\"command\": \"ls\"}."
      })
      const { session, model } = yield* open([
        [{ type: "error", error: invalid } as Part, finish("tool-calls")],
        [...bashCall("c2", { command: "echo fixed" }), finish("tool-calls")],
        [...say("done"), finish("stop")]
      ], { harness: { approveAll: true } })
      const events = yield* turn(session, "go")

      expect(model.requests).toHaveLength(3)
      const first = toolResults(model.requests[1]!)
      expect(first).toMatchObject([{ id: "c1", isFailure: true, result: invalid.message }])
      expect(completed(events, "c1").status).toBe("failed")
      expect(completed(events, "c2").status).toBe("completed")
      expect(lastEvent(events)).toMatchObject({ _tag: "TurnEnded", stopReason: "end_turn" })
    }))

  it.scopedLive("cancel during model text interrupts the stream; the words stay in the history", () =>
    Effect.gen(function*() {
      let interrupted = false
      const { session, model } = yield* open([
        () =>
          Stream.concat(Stream.fromIterable<Part>([{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "Let me think" }]), Stream.never).pipe(
            Stream.onEnd(Effect.void),
            Stream.ensuring(Effect.sync(() => void (interrupted = true)))
          ),
        [...say("back again"), finish("stop")]
      ])
      const events = yield* turn(session, "first", (event, cancel) =>
        event._tag === "AgentText" ? Deferred.succeed(cancel, undefined).pipe(Effect.asVoid) : Effect.void)
      expect(tags(events)).toEqual(["AgentText", "TurnEnded"])
      expect(lastEvent(events)).toMatchObject({ stopReason: "cancelled" })
      expect(interrupted).toBe(true)

      const next = yield* turn(session, "second")
      expect(agentText(next)).toBe("back again")
      expect(lastEvent(next)).toMatchObject({ stopReason: "end_turn" })
      const history = model.requests[1]!.prompt.content.map((m) => [m.role, JSON.stringify(m.content)])
      expect(history.map(([role]) => role)).toEqual(["system", "user", "assistant", "user"])
      expect(history[2]![1]).toContain("Let me think")
    }))

  it.scopedLive("cancel during a command kills it, closes its card, and the next prompt sees the result", () =>
    Effect.gen(function*() {
      const { session, model } = yield* open([
        [...bashCall("c1", { command: "echo started; sleep 31.5" }), ...bashCall("c2", { command: "echo never" }), finish("tool-calls")],
        [...say("ok"), finish("stop")]
      ], { harness: { approveAll: true } })
      const events = yield* turn(session, "sleep", (event, cancel) =>
        event._tag === "ToolOutput" ? Deferred.succeed(cancel, undefined).pipe(Effect.asVoid) : Effect.void)

      expect(lastEvent(events)).toMatchObject({ stopReason: "cancelled" })
      const result = completed(events, "c1")
      expect(result.exit).toMatchObject({ _tag: "Signaled" })
      expect(events.some((e) => e._tag === "ToolCallStarted" && e.callId === "c2")).toBe(false)
      expect(processesRunning("sleep 31.5")).toEqual([])
      expect(model.requests).toHaveLength(1)

      yield* turn(session, "again")
      const results = toolResults(model.requests[1]!)
      expect(results.map((r) => r.id)).toEqual(["c1", "c2"])
      expect(String(results[0]!.result)).toMatch(/^started\n[\s\S]*\[killed by signal: SIG(TERM|KILL)\]$/)
      expect(results[1]).toMatchObject({ isFailure: true })
      expect(String(results[1]!.result)).toMatch(/did not run/)
    }))

  it.scopedLive("cancel while the user is asked closes the pending card; the command never runs", () =>
    Effect.gen(function*() {
      const { session, model, cwd } = yield* open([
        [...bashCall("c1", { command: "touch asked-marker" }), finish("tool-calls")],
        [...say("ok"), finish("stop")]
      ], { decide: () => Effect.never })
      const events = yield* turn(session, "touch", (event, cancel) =>
        event._tag === "ToolCallStarted" ? Deferred.succeed(cancel, undefined).pipe(Effect.asVoid) : Effect.void)
      expect(tags(events)).toEqual(["ToolCallStarted", "ToolCallCompleted", "TurnEnded"])
      expect(completed(events, "c1").status).toBe("failed")
      expect(lastEvent(events)).toMatchObject({ stopReason: "cancelled" })
      expect(existsSync(join(cwd, "asked-marker"))).toBe(false)
      yield* turn(session, "next")
      expect(toolResults(model.requests[1]!)).toMatchObject([{ id: "c1", isFailure: true }])
    }))

  it.scopedLive("an empty response says so instead of ending silently", () =>
    Effect.gen(function*() {
      const { session } = yield* open([[finish("stop")]])
      const events = yield* turn(session, "hello?")
      expect(agentText(events)).toMatch(/empty response \(finish reason: stop\)/)
      expect(lastEvent(events)).toMatchObject({ stopReason: "end_turn" })
    }))

  it.scopedLive("the turn cap ends a prompt with max_turn_requests", () =>
    Effect.gen(function*() {
      const { session, model } = yield* open([
        [...bashCall("c1", { command: "echo 1" }), finish("tool-calls")],
        [...bashCall("c2", { command: "echo 2" }), finish("tool-calls")],
        [...bashCall("c3", { command: "echo 3" }), finish("tool-calls")]
      ], { harness: { approveAll: true, maxTurnRequests: 2 } })
      const events = yield* turn(session, "loop")
      expect(model.requests).toHaveLength(2)
      expect(completed(events, "c2").status).toBe("completed")
      expect(lastEvent(events)).toMatchObject({ stopReason: "max_turn_requests" })
    }))

  it.scopedLive("a provider error mid-stream ends the turn with a message; a malformed stream too; the session stays usable", () =>
    Effect.gen(function*() {
      const { session, model } = yield* open([
        () =>
          Stream.concat(
            Stream.fromIterable<Part>([{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "Hel" }]),
            Stream.fail(new AiError.UnknownError({ module: "Test", method: "streamText", description: "HTTP 500 Internal Server Error" }))
          ),
        [{ type: "text-delta", delta: 42 } as unknown as Part],
        [...say("fine now"), finish("stop")]
      ])
      const failed = yield* turn(session, "hello")
      expect(agentText(failed)).toMatch(/^Hel\n\n⚠️ The model request failed: Test: HTTP 500/)
      expect(lastEvent(failed)).toMatchObject({ stopReason: "end_turn" })

      const malformed = yield* turn(session, "again")
      expect(agentText(malformed)).toMatch(/The model request failed: .*MalformedOutput/)
      expect(lastEvent(malformed)).toMatchObject({ stopReason: "end_turn" })

      const ok = yield* turn(session, "third")
      expect(agentText(ok)).toBe("fine now")
      const roles = model.requests[2]!.prompt.content.map((m) => m.role)
      expect(roles).toEqual(["system", "user", "assistant", "user", "user"])
      expect(JSON.stringify(model.requests[2]!.prompt.content[2])).toContain("Hel")
    }))

  it.scopedLive("finish reasons: length is max_tokens, content-filter is refusal", () =>
    Effect.gen(function*() {
      const { session } = yield* open([
        [...say("a long"), finish("length")],
        [finish("content-filter")]
      ])
      expect(lastEvent(yield* turn(session, "long"))).toMatchObject({ stopReason: "max_tokens" })
      expect(lastEvent(yield* turn(session, "bad"))).toMatchObject({ stopReason: "refusal" })
    }))

  it.scopedLive("background tasks: the start returns at once, the task card runs in the background stream, BashOutput and KillBash", () =>
    Effect.gen(function*() {
      const { session, model } = yield* open([
        [...bashCall("c1", { command: "echo bg-out; sleep 32.5", run_in_background: true }), finish("tool-calls")],
        [...call("c2", "BashOutput", { task_id: "bg-1" }), finish("tool-calls")],
        [...call("c3", "KillBash", { task_id: "bg-1" }), ...call("c4", "BashOutput", { task_id: "bg-9" }), finish("tool-calls")],
        [...say("done"), finish("stop")]
      ], { harness: { approveAll: true } })
      const background: Array<HarnessEvent> = []
      const forward = yield* session.background.pipe(Stream.runForEach((e) => Effect.sync(() => background.push(e))), Effect.fork)
      const events = yield* turn(session, "start a server")

      const started = toolResults(model.requests[1]!)[0]!
      expect(String(started.result)).toMatch(/\[background task bg-1 started\]$/)
      expect(completed(events, "c1")).toMatchObject({ status: "completed" })
      expect(String(toolResults(model.requests[2]!)[1]!.result)).toMatch(/\[background task bg-1 running\]$/)
      const last = toolResults(model.requests[3]!)
      expect(String(last.find((r) => r.id === "c3")!.result)).toMatch(/^Killed bg-1\.\n\[killed by signal: SIG(TERM|KILL)\]$/)
      expect(last.find((r) => r.id === "c4")).toMatchObject({ isFailure: true })
      expect(processesRunning("sleep 32.5")).toEqual([])

      // The task's own card: a terminal card that ends with the task's signal.
      yield* Effect.sync(() => background.some((e) => e._tag === "ToolCallCompleted")).pipe(
        Effect.repeat({ until: (done) => done, schedule: Schedule.spaced("10 millis") }),
        Effect.timeout("10 seconds")
      )
      const taskStart = background.find((e) => e._tag === "ToolCallStarted")
      expect(taskStart).toMatchObject({ callId: "c1-bg-1", presentation: { _tag: "Terminal", title: "echo bg-out; sleep 32.5" } })
      const taskEnd = background.find((e) => e._tag === "ToolCallCompleted")
      expect(taskEnd?._tag === "ToolCallCompleted" && taskEnd.presentation._tag === "Terminal" && taskEnd.presentation.exit).toMatchObject({ _tag: "Signaled" })
      expect(background.filter((e) => e._tag === "ToolOutput").map((e) => e._tag === "ToolOutput" ? e.data : "").join("")).toBe("bg-out\n")
      yield* Fiber.interrupt(forward)
    }))

  it.scopedLive("a reused call id gets its own card id; results keep the model's id", () =>
    Effect.gen(function*() {
      const { session, model } = yield* open([
        [...bashCall("same", { command: "echo a" }), finish("tool-calls")],
        [...bashCall("same", { command: "echo b" }), finish("tool-calls")],
        [...say("ok"), finish("stop")]
      ], { harness: { approveAll: true } })
      const events = yield* turn(session, "twice")
      const cards = events.flatMap((e) => (e._tag === "ToolCallStarted" ? [e.callId] : []))
      expect(cards).toEqual(["same", "same~2"])
      expect(toolResults(model.requests[2]!).map((r) => r.id)).toEqual(["same", "same"])
      expect(StatusLines.parse(String(toolResults(model.requests[2]!)[1]!.result))._tag).toBe("Right")
    }))

  it.scopedLive("a custom system prompt replaces the default", () =>
    Effect.gen(function*() {
      const { session, model, cwd } = yield* open([[...say("hi"), finish("stop")]], {
        harness: { systemPrompt: (ctx) => `CUSTOM in ${ctx.cwd} with ${ctx.tools.join("+")}` }
      })
      yield* turn(session, "hello")
      expect(model.requests[0]!.prompt.content[0]).toMatchObject({ role: "system", content: `CUSTOM in ${cwd} with Bash+BashOutput+KillBash` })
    }))
})
