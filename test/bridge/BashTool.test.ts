import { describe, expect, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as FastCheck from "effect/FastCheck"
import { BashTool, presentTaskCall } from "../../src/Bash/BashTool.js"
import * as ExitStatus from "../../src/Bash/ExitStatus.js"
import * as StatusLines from "../../src/Bash/StatusLines.js"

const ctx = { cwd: "/home/u/project" }

describe("BashTool.presentCall", () => {
  it("titles the card with the exact command and opens a terminal in the session cwd", () => {
    const p = BashTool.presentCall({ command: "ls -la | grep 'x y'", description: "List files" }, ctx)
    expect(p).toEqual({
      title: "ls -la | grep 'x y'",
      kind: "execute",
      content: [{ _tag: "Text", text: "List files" }],
      terminal: { cwd: "/home/u/project" },
      input: { command: "ls -la | grep 'x y'", description: "List files" }
    })
  })

  it("resolves workdir against the session cwd", () => {
    expect(BashTool.presentCall({ command: "make", workdir: "sub/../build" }, ctx).terminal).toEqual({ cwd: "/home/u/project/build" })
    expect(BashTool.presentCall({ command: "make", workdir: "/tmp/x/" }, ctx).terminal).toEqual({ cwd: "/tmp/x" })
    expect(BashTool.presentCall({ command: "make" }, ctx).content).toEqual([])
  })

  it("does not give a background start a terminal (the task has its own card)", () => {
    const p = BashTool.presentCall({ command: "npm run dev", run_in_background: true }, ctx)
    expect(p.terminal).toBeUndefined()
    expect(presentTaskCall({ command: "npm run dev" }, "bg-1", ctx).terminal).toEqual({ cwd: ctx.cwd })
  })

  it("describes the tool's semantics to models", () => {
    expect(BashTool.name).toBe("Bash")
    for (const needle of ["[exit code: N]", "[killed by signal: SIGTERM]", "cd", "run_in_background", "120000", "600000", "30000"]) {
      expect(BashTool.description).toContain(needle)
    }
  })
})

describe("BashTool.presentResult", () => {
  const args = { command: "make test", description: "Run tests" }

  it("decodes the exit and the output from the rendered result", () => {
    const text = StatusLines.render({ output: "ok\n", timedOutAfterMs: 120_000, end: ExitStatus.signaled("SIGTERM") })
    const r = BashTool.presentResult(args, text, ctx)
    expect(r.status).toBe("failed")
    expect(r.content).toEqual([{ _tag: "Text", text: "Run tests" }])
    expect(r.terminal).toEqual({ output: "ok\n", exit: ExitStatus.signaled("SIGTERM"), transcript: text })
    expect(r.facts).toEqual({ exit_code: null, signal: "SIGTERM", timed_out: true, timed_out_after_ms: 120_000 })
  })

  it("is completed exactly for exit code 0", () => {
    expect(BashTool.presentResult(args, "[exit code: 0]", ctx).status).toBe("completed")
    expect(BashTool.presentResult(args, "x\n[exit code: 1]", ctx).status).toBe("failed")
  })

  it("reports truncation as a small fact", () => {
    const text = StatusLines.render({ output: "a\n", truncated: { omittedChars: 99, savedTo: "/tmp/out" }, end: ExitStatus.exited(0) })
    expect(BashTool.presentResult(args, text, ctx).facts).toEqual({
      exit_code: 0, signal: null, truncated: { omitted_chars: 99, full_output: "/tmp/out" }
    })
  })

  it("shows a background start as completed text without a terminal", () => {
    const text = StatusLines.render({ output: "listening\n", end: StatusLines.BackgroundStarted.make({ taskId: "bg-2" }) })
    const r = BashTool.presentResult({ command: "serve", run_in_background: true }, text, ctx)
    expect(r.status).toBe("completed")
    expect(r.terminal).toBeUndefined()
    expect(r.content).toEqual([{ _tag: "Text", text }])
    expect(r.facts).toEqual({ background_task_id: "bg-2" })
  })

  it("presents text that is not a rendered result as failed, showing it", () => {
    const r = BashTool.presentResult(args, "BashError: no such directory: /nope", ctx)
    expect(r.status).toBe("failed")
    expect(r.terminal).toBeUndefined()
    expect(r.content).toContainEqual({ _tag: "Text", text: "BashError: no such directory: /nope" })
    expect(String(r.facts?.message)).toContain("last line")
  })

  it.prop("never throws, whatever the text", [FastCheck.string()], ([text]) => {
    const r = BashTool.presentResult(args, text, ctx)
    expect(["completed", "failed"]).toContain(r.status)
  })

  it.prop(
    "recovers exactly the exit and output that were rendered",
    [Arbitrary.make(StatusLines.ResultParts)],
    ([parts]) => {
      const text = StatusLines.render(parts)
      const r = BashTool.presentResult(args, text, ctx)
      const end = parts.end
      if (end._tag === "BackgroundStarted") {
        expect(r.terminal).toBeUndefined()
        expect(r.facts?.background_task_id).toBe(end.taskId)
        return
      }
      expect(r.terminal?.exit).toEqual(end)
      expect(r.terminal?.output).toBe(parts.output)
      expect(r.terminal?.transcript).toBe(text)
      expect(r.status).toBe(ExitStatus.isSuccess(end) ? "completed" : "failed")
      expect(r.facts?.exit_code).toBe(end._tag === "Exited" ? end.code : null)
      expect(r.facts?.signal).toBe(end._tag === "Signaled" ? end.signal : null)
      expect(r.facts?.timed_out).toBe(parts.timedOutAfterMs !== undefined ? true : undefined)
    },
    { fastCheck: { numRuns: 300 } }
  )
})
