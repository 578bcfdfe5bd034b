import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import type { BashArgs } from "../../src/Tools/Bash/BashArgs.js"
import * as BashTool from "../../src/Tools/Bash/BashTool.js"
import * as Intent from "../../src/Presentation/Intent.js"

const { presentTaskCall } = BashTool
import * as ExitStatus from "../../src/Terminal/ExitStatus.js"
import * as StatusLines from "../../src/Bash/StatusLines.js"
import { Capabilities, type TerminalMode } from "../../src/Bridge/Capabilities.js"
import { stripAnsi } from "../../src/Terminal/Ansi.js"
import { consoleFence, longestBacktickRun } from "../../src/Bridge/ConsoleFence.js"
import { skippedNote } from "../../src/Bridge/LiveOutput.js"
import { Mapping, type MappingConfig, type SessionMapper } from "../../src/Bridge/Mapping.js"
import type { SessionNotification } from "../../src/Bridge/SessionUpdate.js"
import { HarnessEvent } from "../../src/Harness/HarnessEvent.js"
import { validateAcp } from "../support/acpSchema.js"
import { type BashRun, runBashChunks } from "../support/bashChunks.js"
import { replayLikeZed } from "../support/zedReplay.js"

const SESSION = "sess-1"
const CWD = "/home/u/project"
const ctx = { cwd: CWD }

const zed: TerminalMode = { _tag: "Card", outputKey: "terminal_output" }
const delta: TerminalMode = { _tag: "Card", outputKey: "terminal_output_delta" }
const textOnly: TerminalMode = { _tag: "Text" }

/** A mapper for one session in `mode`, recording every emitted params object. */
const withMapper = <A>(
  mode: TerminalMode,
  config: Partial<MappingConfig>,
  body: (mapper: SessionMapper, sent: Array<SessionNotification>) => Effect.Effect<A>
) =>
  Effect.gen(function*() {
    const sent: Array<SessionNotification> = []
    const mapping = yield* Mapping
    const mapper = yield* mapping.forSession(SESSION, (params) => Effect.sync(() => void sent.push(params)))
    return yield* body(mapper, sent)
  }).pipe(
    Effect.scoped,
    Effect.provide(Mapping.layerWith(config).pipe(Layer.provide(Capabilities.layerFixed(mode))))
  )

const mapAll = (mode: TerminalMode, config: Partial<MappingConfig>, events: ReadonlyArray<HarnessEvent>) =>
  withMapper(mode, config, (mapper, sent) => Effect.as(Effect.forEach(events, mapper.consume, { discard: true }), sent))

/** Every payload is plain JSON and a valid ACP v1 `SessionNotification`. */
const expectValid = (sent: ReadonlyArray<SessionNotification>) => {
  for (const params of sent) {
    expect(validateAcp("SessionNotification", params), JSON.stringify(params).slice(0, 500)).toEqual([])
    expect(JSON.parse(JSON.stringify(params))).toEqual(params)
  }
}

/** No terminal block and no `_meta.terminal_*` anywhere (what a client without the capability needs). */
const expectNoTerminalTrace = (sent: ReadonlyArray<SessionNotification>) => {
  for (const { update } of sent) {
    const u = update as any
    for (const key of Object.keys(u._meta ?? {})) expect(key.startsWith("terminal")).toBe(false)
    for (const item of u.content ?? []) expect(item.type).not.toBe("terminal")
  }
}

const resultText = (run: BashRun) =>
  StatusLines.render({ output: StatusLines.toOutputText(stripAnsi(run.output)), end: run.exit })

const bashEvents = (callId: string, args: BashArgs, run: BashRun): ReadonlyArray<HarnessEvent> => [
  HarnessEvent.ToolCallStarted({ callId, presentation: BashTool.presentCall(args, ctx), pending: false }),
  ...run.chunks.map((data) => HarnessEvent.ToolOutput({ callId, data })),
  HarnessEvent.ToolCallCompleted({ callId, presentation: BashTool.presentResult(args, resultText(run), ctx) })
]

const exitMeta = (exit: ExitStatus.ExitStatus) => ({
  exit_code: exit._tag === "Exited" ? exit.code : null,
  signal: exit._tag === "Signaled" ? exit.signal : null
})

const scripts: Record<string, string> = {
  "stdout and stderr": "echo hello; echo world >&2; echo done",
  "a failing command": "echo oops; exit 2",
  "a signal death": "echo before; kill -TERM $$",
  "backtick fences": "printf '%s\\n' '```js' 'x' '````' 'y```'",
  "ANSI colours": "printf '\\033[1;31mred\\033[0m plain\\n\\033[32mgreen\\033[0m\\n'",
  "a \\r progress bar": "for i in 10 50 100; do printf '\\r[%-10s] %s%%' \"$(printf '#%.0s' $(seq 1 $((i / 10))))\" $i; sleep 0.01; done; echo",
  "invalid UTF-8": "printf 'a\\377b\\303\\n\\342\\202\\254 ok\\n'",
  "no output": "true",
  "no trailing newline": "printf 'last line'"
}

const runs: Record<string, BashRun> = Object.fromEntries(
  await Promise.all(Object.entries(scripts).map(async ([name, script]) => [name, await runBashChunks(script)] as const))
)

describe("Mapping: real bash output through every form", () => {
  it("the recorded runs are what the cases claim", () => {
    expect(runs["invalid UTF-8"]!.output).toBe("a\uFFFDb\uFFFD\n€ ok\n")
    expect(runs["a signal death"]!.exit).toEqual(ExitStatus.signaled("SIGTERM"))
    expect(runs["a failing command"]!.exit).toEqual(ExitStatus.exited(2))
    expect(runs["no output"]!.chunks).toEqual([])
    expect(runs["ANSI colours"]!.output).toContain("\u001b[1;31m")
    expect(runs["a \\r progress bar"]!.output).toContain("\r")
  })

  for (const [name, script] of Object.entries(scripts)) {
    const args: BashArgs = { command: script, description: `Case: ${name}` }

    for (const [modeName, mode] of [["terminal_output", zed], ["terminal_output_delta", delta]] as const) {
      for (const liveOutput of [true, false]) {
        it.effect(`card (${modeName}, ${liveOutput ? "live" : "completion-only"}): ${name}`, () =>
          Effect.gen(function*() {
            const run = runs[name]!
            const sent = yield* mapAll(mode, { liveOutput }, bashEvents("call-1", args, run))
            expectValid(sent)
            const replay = replayLikeZed(sent, { outputKey: mode.outputKey })
            expect(replay.problems).toEqual([])
            const card = replay.cards.get("call-1")!
            expect(card.title).toBe(script)
            // The terminal shows the command's output exactly once, then its exit.
            expect(card.terminal?.cwd).toBe(CWD)
            expect(card.terminal?.output).toBe(run.output)
            expect(card.terminal?.exit).toEqual(exitMeta(run.exit))
            expect(card.status).toBe(ExitStatus.isSuccess(run.exit) ? "completed" : "failed")
            expect(card.content).toEqual([
              { type: "content", content: { type: "text", text: `Case: ${name}` } },
              { type: "terminal", terminalId: "call-1" }
            ])
            expect(card.rawOutput).toEqual(exitMeta(run.exit))
            if (!liveOutput || run.output === "") expect(card.terminal?.chunks).toBe(run.output === "" ? 0 : 1)
            // Only the key the client asked for.
            const other = mode.outputKey === "terminal_output" ? "terminal_output_delta" : "terminal_output"
            expect(sent.some((n) => other in ((n.update as any)._meta ?? {}))).toBe(false)
          }))
      }
    }

    it.effect(`text fallback: ${name}`, () =>
      Effect.gen(function*() {
        const run = runs[name]!
        const sent = yield* mapAll(textOnly, {}, bashEvents("call-1", args, run))
        expectValid(sent)
        expectNoTerminalTrace(sent)
        expect(sent.map((n) => n.update.sessionUpdate)).toEqual(["tool_call", "tool_call_update"])
        const [start, end] = sent.map((n) => n.update as any)
        expect(start.content).toEqual([{ type: "content", content: { type: "text", text: `Case: ${name}` } }])
        expect(start.rawInput).toEqual(args)
        expect(end.status).toBe(ExitStatus.isSuccess(run.exit) ? "completed" : "failed")
        expect(end.content).toHaveLength(1)
        const shown: string = end.content[0].content.text
        expect(shown).toBe(consoleFence(resultText(run)))
        expect(shown).toMatch(/^(`{3,})console\n[\s\S]*\n\1$/)
        expect(shown).not.toContain("\u001b")
        const exitLine = run.exit._tag === "Exited" ? `[exit code: ${run.exit.code}]` : `[killed by signal: ${run.exit.signal}]`
        expect(shown.split("\n").at(-2)).toBe(exitLine)
        // The fence is never closed by the output inside it: no backtick run inside is as long.
        const fence = /^`+/.exec(shown)![0]
        expect(longestBacktickRun(shown.slice(fence.length, -fence.length))).toBeLessThan(fence.length)
        expect(longestBacktickRun(run.output)).toBeLessThan(fence.length)
      }))
  }
})

describe("Mapping: live output", () => {
  const args: BashArgs = { command: "make" }
  const start = HarnessEvent.ToolCallStarted({ callId: "c", presentation: BashTool.presentCall(args, ctx), pending: false })
  const out = (data: string) => HarnessEvent.ToolOutput({ callId: "c", data })
  const done = HarnessEvent.ToolCallCompleted({
    callId: "c",
    presentation: BashTool.presentResult(args, StatusLines.render({ output: "abcd\n", end: ExitStatus.exited(0) }), ctx)
  })
  const outputs = (sent: ReadonlyArray<SessionNotification>) =>
    sent.flatMap((n) => {
      const o = (n.update as any)._meta?.terminal_output
      return o === undefined ? [] : [o.data as string]
    })

  it.effect("sends the first chunk at once, then at most one update per 50 ms, and flushes before the exit", () =>
    withMapper(zed, {}, (mapper, sent) =>
      Effect.gen(function*() {
        yield* mapper.consume(start)
        yield* mapper.consume(out("a"))
        expect(outputs(sent)).toEqual(["a"])
        yield* mapper.consume(out("b"))
        yield* mapper.consume(out("c"))
        yield* TestClock.adjust("49 millis")
        expect(outputs(sent)).toEqual(["a"])
        yield* TestClock.adjust("1 millis")
        expect(outputs(sent)).toEqual(["a", "bc"])
        yield* mapper.consume(out("d\n"))
        expect(outputs(sent)).toEqual(["a", "bc"])
        yield* mapper.consume(done)
        expect(outputs(sent)).toEqual(["a", "bc", "d\n"])
        const last = sent.at(-1)!.update as any
        expect(last._meta.terminal_exit).toEqual({ terminal_id: "c", exit_code: 0, signal: null })
        // A timer that was pending when the call ended must not fire afterwards.
        yield* TestClock.adjust("1 second")
        expect(sent.at(-1)!.update).toBe(last)
        expectValid(sent)
        expect(replayLikeZed(sent).problems).toEqual([])
      })))

  it.effect("completion-only sends nothing until the end, then everything in one update", () =>
    withMapper(zed, { liveOutput: false }, (mapper, sent) =>
      Effect.gen(function*() {
        yield* mapper.consume(start)
        for (const c of ["a", "b", "c", "d\n"]) yield* mapper.consume(out(c))
        yield* TestClock.adjust("1 second")
        expect(outputs(sent)).toEqual([])
        yield* mapper.consume(done)
        expect(outputs(sent)).toEqual(["abcd\n"])
        expect(sent.map((n) => Object.keys((n.update as any)._meta ?? {}))).toEqual([["terminal_info"], ["terminal_output"], ["terminal_exit"]])
      })))

  it.effect("uses the result's output when the harness streamed nothing", () =>
    withMapper(zed, {}, (mapper, sent) =>
      Effect.gen(function*() {
        yield* mapper.consume(start)
        yield* mapper.consume(done)
        expect(outputs(sent)).toEqual(["abcd\n"])
      })))

  it.effect("flush and TurnEnded send pending output without waiting for the timer", () =>
    withMapper(zed, {}, (mapper, sent) =>
      Effect.gen(function*() {
        yield* mapper.consume(start)
        yield* mapper.consume(out("a"))
        yield* mapper.consume(out("b"))
        yield* mapper.flush
        expect(outputs(sent)).toEqual(["a", "b"])
        yield* mapper.consume(out("c"))
        yield* mapper.consume(HarnessEvent.TurnEnded({ stopReason: "end_turn" }))
        expect(outputs(sent)).toEqual(["a", "b", "c"])
      })))

  for (const liveOutput of [true, false]) {
    it.live(`keeps to the display budget: head, one skip line, rolling tail (${liveOutput ? "live" : "completion-only"})`, () =>
      Effect.gen(function*() {
        const run = yield* Effect.promise(() => runBashChunks("seq 1 3000"))
        const sent = yield* mapAll(zed, { liveOutput, displayBudgetBytes: 1000, displayTailBytes: 200 }, bashEvents("big", { command: "seq 1 3000" }, run))
        expectValid(sent)
        const replay = replayLikeZed(sent)
        expect(replay.problems).toEqual([])
        const total = run.output.length // ASCII: bytes = characters
        expect(replay.terminals.get("big")!.output).toBe(run.output.slice(0, 800) + skippedNote(total - 1000) + run.output.slice(-200))
        expect(replay.terminals.get("big")!.exit).toEqual({ exit_code: 0, signal: null })
      }))
  }

  it.live("keeps every call's updates in order when events of two calls interleave with real time", () =>
    Effect.gen(function*() {
      const sent = yield* withMapper(zed, { coalesceMs: 5 }, (mapper, sent) =>
        Effect.gen(function*() {
          const one = (id: string) =>
            Effect.gen(function*() {
              yield* mapper.consume(HarnessEvent.ToolCallStarted({ callId: id, presentation: BashTool.presentCall(args, ctx), pending: false }))
              for (let i = 0; i < 40; i++) {
                yield* mapper.consume(HarnessEvent.ToolOutput({ callId: id, data: `${id}:${i}\n` }))
                if (i % 7 === 0) yield* Effect.sleep("3 millis")
              }
              const output = Array.from({ length: 40 }, (_, i) => `${id}:${i}\n`).join("")
              yield* mapper.consume(HarnessEvent.ToolCallCompleted({
                callId: id,
                presentation: BashTool.presentResult(args, StatusLines.render({ output, end: ExitStatus.exited(3) }), ctx)
              }))
            })
          yield* Effect.all([one("x"), one("y")], { concurrency: 2, discard: true })
          return sent
        }))
      expectValid(sent)
      const replay = replayLikeZed(sent)
      expect(replay.problems).toEqual([])
      for (const id of ["x", "y"]) {
        expect(replay.terminals.get(id)!.output).toBe(Array.from({ length: 40 }, (_, i) => `${id}:${i}\n`).join(""))
        expect(replay.terminals.get(id)!.exit).toEqual({ exit_code: 3, signal: null })
      }
    }))
})

describe("Mapping: other events and forms", () => {
  it.effect("agent text and thoughts become message and thought chunks", () =>
    Effect.gen(function*() {
      const sent = yield* mapAll(zed, {}, [
        HarnessEvent.AgentText({ text: "Hello" }),
        HarnessEvent.AgentThought({ text: "hmm" }),
        HarnessEvent.AgentText({ text: "" })
      ])
      expectValid(sent)
      expect(sent).toEqual([
        { sessionId: SESSION, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hello" } } },
        { sessionId: SESSION, update: { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hmm" } } }
      ])
    }))

  it.effect("a pending call becomes in_progress when it runs", () =>
    Effect.gen(function*() {
      const args: BashArgs = { command: "rm -rf build" }
      const sent = yield* mapAll(zed, {}, [
        HarnessEvent.ToolCallStarted({ callId: "p", presentation: BashTool.presentCall(args, ctx), pending: true }),
        HarnessEvent.ToolCallRunning({ callId: "p" })
      ])
      expectValid(sent)
      expect(sent.map((n) => (n.update as any).status)).toEqual(["pending", "in_progress"])
      expect(sent[1]!.update).toEqual({ sessionUpdate: "tool_call_update", toolCallId: "p", status: "in_progress" })
    }))

  it.effect("a generic intent is plain content in every mode", () =>
    Effect.gen(function*() {
      for (const mode of [zed, textOnly]) {
        const sent = yield* mapAll(mode, {}, [
          HarnessEvent.ToolCallStarted({ callId: "r", presentation: Intent.GenericCall.make({ title: "Read a.txt", kind: "read" }), pending: false }),
          HarnessEvent.ToolOutput({ callId: "r", data: "ignored" }),
          HarnessEvent.ToolCallCompleted({
            callId: "r",
            presentation: Intent.GenericResult.make({ status: "completed", content: [Intent.text("file body")], facts: { bytes: 9 } })
          })
        ])
        expectValid(sent)
        expectNoTerminalTrace(sent)
        expect(sent.map((n) => n.update)).toEqual([
          { sessionUpdate: "tool_call", toolCallId: "r", title: "Read a.txt", kind: "read", status: "in_progress", content: [] },
          {
            sessionUpdate: "tool_call_update",
            toolCallId: "r",
            status: "completed",
            content: [{ type: "content", content: { type: "text", text: "file body" } }],
            rawOutput: { bytes: 9 }
          }
        ])
      }
    }))

  it.effect("a background start is a plain card; the task gets its own terminal card", () =>
    Effect.gen(function*() {
      const args: BashArgs = { command: "npm run dev", run_in_background: true }
      const started = StatusLines.render({ output: "ready\n", end: StatusLines.BackgroundStarted.make({ taskId: "bg-1" }) })
      const taskEnd = StatusLines.render({ output: "ready\nbye\n", end: ExitStatus.signaled("SIGTERM") })
      const sent = yield* mapAll(zed, {}, [
        HarnessEvent.ToolCallStarted({ callId: "s", presentation: BashTool.presentCall(args, ctx), pending: false }),
        HarnessEvent.ToolCallCompleted({ callId: "s", presentation: BashTool.presentResult(args, started, ctx) }),
        HarnessEvent.ToolCallStarted({ callId: "s/bg-1", presentation: presentTaskCall(args, "bg-1", ctx), pending: false }),
        HarnessEvent.ToolOutput({ callId: "s/bg-1", data: "ready\n" }),
        HarnessEvent.ToolOutput({ callId: "s/bg-1", data: "bye\n" }),
        HarnessEvent.ToolCallCompleted({ callId: "s/bg-1", presentation: BashTool.presentResult(args, taskEnd, ctx) })
      ])
      expectValid(sent)
      const replay = replayLikeZed(sent)
      expect(replay.problems).toEqual([])
      expect(replay.cards.get("s")!.terminal).toBeUndefined()
      expect(replay.cards.get("s")!.status).toBe("completed")
      expect(replay.cards.get("s")!.content).toEqual([{ type: "content", content: { type: "text", text: started } }])
      expect(replay.terminals.get("s/bg-1")).toMatchObject({ output: "ready\nbye\n", exit: { exit_code: null, signal: "SIGTERM" } })
      // The task card's final update re-sends the content of its `tool_call`, so nothing is lost.
      const taskStart = sent.find((n) => n.update.sessionUpdate === "tool_call" && n.update.toolCallId === "s/bg-1")!.update as any
      const taskEnd_ = sent.at(-1)!.update as any
      expect(taskStart.content).toContainEqual({ type: "content", content: { type: "text", text: "background task bg-1" } })
      expect(taskEnd_.content).toEqual(taskStart.content)
    }))

  it.effect("a result that does not decode still closes the card, failed, showing the text", () =>
    Effect.gen(function*() {
      const args: BashArgs = { command: "ls", workdir: "/nope" }
      for (const mode of [zed, textOnly]) {
        const sent = yield* mapAll(mode, {}, [
          HarnessEvent.ToolCallStarted({ callId: "e", presentation: BashTool.presentCall(args, ctx), pending: false }),
          HarnessEvent.ToolCallCompleted({ callId: "e", presentation: BashTool.presentResult(args, "BashError: no such directory /nope", ctx) })
        ])
        expectValid(sent)
        const end = sent.at(-1)!.update as any
        expect(end.status).toBe("failed")
        expect(end.content[0]).toEqual({ type: "content", content: { type: "text", text: "BashError: no such directory /nope" } })
        if (mode._tag === "Card") {
          expect(end._meta.terminal_exit).toEqual({ terminal_id: "e", exit_code: null, signal: null })
          expect(replayLikeZed(sent).problems).toEqual([])
        } else {
          expectNoTerminalTrace(sent)
        }
      }
    }))

  it.effect("closeOpen closes the chosen cards with the signal, and leaves the others open", () =>
    withMapper(zed, {}, (mapper, sent) =>
      Effect.gen(function*() {
        const args: BashArgs = { command: "sleep 100", description: "wait" }
        for (const id of ["turn", "bg"]) {
          yield* mapper.consume(HarnessEvent.ToolCallStarted({ callId: id, presentation: BashTool.presentCall(args, ctx), pending: false }))
        }
        yield* mapper.consume(HarnessEvent.ToolOutput({ callId: "turn", data: "x" }))
        yield* mapper.consume(HarnessEvent.ToolOutput({ callId: "turn", data: "y" }))
        yield* mapper.closeOpen({ signal: "SIGINT", callIds: ["turn"] })
        expect(yield* mapper.openCalls).toEqual(["bg"])
        yield* mapper.closeOpen()
        expect(yield* mapper.openCalls).toEqual([])
        expectValid(sent)
        const replay = replayLikeZed(sent)
        expect(replay.problems).toEqual([])
        expect(replay.terminals.get("turn")).toMatchObject({ output: "xy", exit: { exit_code: null, signal: "SIGINT" } })
        expect(replay.terminals.get("bg")).toMatchObject({ output: "", exit: { exit_code: null, signal: "SIGTERM" } })
        expect(replay.cards.get("turn")!.status).toBe("failed")
        expect(replay.cards.get("turn")!.content).toEqual([
          { type: "content", content: { type: "text", text: "wait" } },
          { type: "terminal", terminalId: "turn" }
        ])
        // A late completion for a closed call is dropped, not sent after the exit.
        const count = sent.length
        yield* mapper.consume(HarnessEvent.ToolCallCompleted({
          callId: "turn",
          presentation: BashTool.presentResult(args, "[killed by signal: SIGINT]", ctx)
        }))
        expect(sent.length).toBe(count)
      })))

  it.effect("reads the mode from the connection's Capabilities", () =>
    Effect.gen(function*() {
      const caps = yield* Capabilities
      yield* caps.set({ protocolVersion: 1, clientCapabilities: { _meta: { terminal_output: true, "terminal-auth": true } } })
      const mapping = yield* Mapping
      const sent: Array<SessionNotification> = []
      const mapper = yield* mapping.forSession(SESSION, (p) => Effect.sync(() => void sent.push(p)))
      yield* mapper.consume(HarnessEvent.ToolCallStarted({ callId: "k", presentation: BashTool.presentCall({ command: "ls" }, ctx), pending: false }))
      expect((sent[0]!.update as any)._meta).toEqual({ terminal_info: { terminal_id: "k", cwd: CWD } })
    }).pipe(Effect.scoped, Effect.provide(Mapping.layer.pipe(Layer.provideMerge(Capabilities.layer)))))
})
