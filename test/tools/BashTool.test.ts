import { describe, expect, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import * as StatusLines from "../../src/Bash/StatusLines.js"
import * as Intent from "../../src/Presentation/Intent.js"
import * as ExitStatus from "../../src/Terminal/ExitStatus.js"
import { BashArgs } from "../../src/Tools/Bash/BashArgs.js"
import * as BashTool from "../../src/Tools/Bash/BashTool.js"
import * as BashTools from "../../src/Tools/Bash/BashTools.js"

const ctx = { cwd: "/home/u/project" }
const resultCtx = { ...ctx, isFailure: false }

describe("BashTool.presentCall", () => {
  it("titles the card with the exact command and opens a terminal in the session cwd", () => {
    const p = BashTool.presentCall({ command: "make test", description: "Run tests" }, ctx)
    expect(p).toEqual({
      _tag: "Terminal",
      title: "make test",
      kind: "execute",
      cwd: "/home/u/project",
      content: [{ _tag: "Text", text: "Run tests" }],
      locations: [],
      input: { command: "make test", description: "Run tests" }
    })
    expect(Schema.is(Intent.CallIntent)(p)).toBe(true)
  })

  it("resolves workdir against the session cwd", () => {
    const cwdOf = (intent: Intent.CallIntent) => (intent._tag === "Terminal" ? intent.cwd : undefined)
    expect(cwdOf(BashTool.presentCall({ command: "make", workdir: "sub/../build" }, ctx))).toBe("/home/u/project/build")
    expect(cwdOf(BashTool.presentCall({ command: "make", workdir: "/tmp/x/" }, ctx))).toBe("/tmp/x")
    expect(BashTool.presentCall({ command: "make" }, ctx)).toMatchObject({ content: [] })
  })

  it("does not give a background start a terminal (the task has its own card)", () => {
    const p = BashTool.presentCall({ command: "npm run dev", run_in_background: true }, ctx)
    expect(p._tag).toBe("Generic")
    expect(BashTool.presentTaskCall({ command: "npm run dev" }, "bg-1", ctx)).toMatchObject({
      _tag: "Terminal",
      cwd: ctx.cwd,
      content: [{ _tag: "Text", text: "background task bg-1" }]
    })
  })

  it("describes the tool's semantics to models", () => {
    for (const needle of ["[exit code: N]", "[killed by signal: SIGTERM]", "cd", "run_in_background", "120000", "600000", "30000"]) {
      expect(BashTools.BASH_DESCRIPTION).toContain(needle)
    }
  })
})

describe("BashTool.presentResult", () => {
  const args = { command: "make test", description: "Run tests" }

  it("decodes the exit, the output and the status lines from the rendered result", () => {
    const text = StatusLines.render({ output: "ok\n", timedOutAfterMs: 120_000, end: ExitStatus.signaled("SIGTERM") })
    const r = BashTool.presentResult(args, text, resultCtx)
    expect(r).toEqual({
      _tag: "Terminal",
      output: "ok\n",
      exit: ExitStatus.signaled("SIGTERM"),
      statusLines: ["[timed out after 120s]", "[killed by signal: SIGTERM]"],
      facts: { exit_code: null, signal: "SIGTERM", timed_out: true, timed_out_after_ms: 120_000 }
    })
    expect(Intent.statusOf(r)).toBe("failed")
    expect(r._tag === "Terminal" && Intent.transcript(r)).toBe(text)
  })

  it("is completed exactly for exit code 0", () => {
    expect(Intent.statusOf(BashTool.presentResult(args, "[exit code: 0]", resultCtx))).toBe("completed")
    expect(Intent.statusOf(BashTool.presentResult(args, "x\n[exit code: 1]", resultCtx))).toBe("failed")
  })

  it("reports truncation as a small fact", () => {
    const text = StatusLines.render({ output: "a\n", truncated: { omittedChars: 99, savedTo: "/tmp/out" }, end: ExitStatus.exited(0) })
    expect(BashTool.presentResult(args, text, resultCtx).facts).toEqual({
      exit_code: 0, signal: null, truncated: { omitted_chars: 99, full_output: "/tmp/out" }
    })
  })

  it("shows a background start as completed generic text", () => {
    const text = StatusLines.render({ output: "listening\n", end: StatusLines.BackgroundStarted.make({ taskId: "bg-2" }) })
    const r = BashTool.presentResult({ command: "serve", run_in_background: true }, text, resultCtx)
    expect(r).toEqual({ _tag: "Generic", status: "completed", content: [{ _tag: "Text", text }], locations: [], facts: { background_task_id: "bg-2" } })
  })

  it("presents text that is not a rendered result (an executor failure) as failed, showing it", () => {
    const r = BashTool.presentResult(args, "The command could not run: no such directory: /nope", resultCtx)
    expect(r._tag).toBe("Generic")
    expect(Intent.statusOf(r)).toBe("failed")
    expect(r._tag === "Generic" && r.content).toContainEqual({ _tag: "Text", text: "The command could not run: no such directory: /nope" })
    expect(String(r.facts?.message)).toContain("last line")
  })

  it.prop("never throws and always gives a valid intent, whatever the text", [FastCheck.string()], ([text]) => {
    expect(Schema.is(Intent.ResultIntent)(BashTool.presentResult(args, text, resultCtx))).toBe(true)
  })

  it.prop(
    "presenting from the text gives the same intent as presenting from the parts it was rendered from",
    [Arbitrary.make(BashArgs), Arbitrary.make(StatusLines.ResultParts)],
    ([anyArgs, parts]) => {
      const fromText = BashTool.presentResult(anyArgs, StatusLines.render(parts), resultCtx)
      expect(fromText).toEqual(BashTool.presentParts(anyArgs, parts))
      expect(Schema.is(Intent.ResultIntent)(fromText)).toBe(true)
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "recovers exactly the exit and output that were rendered, and their transcript is the text",
    [Arbitrary.make(StatusLines.ResultParts)],
    ([parts]) => {
      const text = StatusLines.render(parts)
      const r = BashTool.presentResult(args, text, resultCtx)
      const end = parts.end
      if (end._tag === "BackgroundStarted") {
        expect(r._tag).toBe("Generic")
        expect(r.facts?.background_task_id).toBe(end.taskId)
        return
      }
      if (r._tag !== "Terminal") throw new Error(`expected a terminal result, got ${r._tag}`)
      expect(r.exit).toEqual(end)
      expect(r.output).toBe(parts.output)
      expect(Intent.transcript(r)).toBe(text)
      expect(Intent.statusOf(r)).toBe(ExitStatus.isSuccess(end) ? "completed" : "failed")
      expect(r.facts?.exit_code).toBe(end._tag === "Exited" ? end.code : null)
      expect(r.facts?.signal).toBe(end._tag === "Signaled" ? end.signal : null)
      expect(r.facts?.timed_out).toBe(parts.timedOutAfterMs !== undefined ? true : undefined)
    },
    { fastCheck: { numRuns: 300 } }
  )
})
