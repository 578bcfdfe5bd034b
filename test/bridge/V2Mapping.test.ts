/**
 * The v2 mapper on every render intent, without processes: what a v2 client replays, and every
 * payload valid against the official v2 schema. (The real agent over stdio: test/e2e/v2.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Permission from "../../src/Bridge/V2/Permission.js"
import * as GitPatch from "../../src/Bridge/V2/GitPatch.js"
import * as V2Mapping from "../../src/Bridge/V2/Mapping.js"
import type { SessionNotification } from "../../src/Bridge/V2/SessionUpdate.js"
import { HarnessEvent } from "../../src/Harness/HarnessEvent.js"
import * as Intent from "../../src/Presentation/Intent.js"
import * as ExitStatus from "../../src/Terminal/ExitStatus.js"
import { validateAcpV2 } from "../support/acpSchema.js"
import { replayV2 } from "../support/v2Replay.js"

const SESSION = "sess-1"
const CWD = "/home/u/project"

const run = (events: ReadonlyArray<HarnessEvent>, after?: (mapper: V2Mapping.V2SessionMapper) => Effect.Effect<void, unknown>) =>
  Effect.gen(function*() {
    const sent: Array<SessionNotification> = []
    const mapper = yield* V2Mapping.make(SESSION, (params) => Effect.sync(() => void sent.push(params)), { liveOutput: false })
    yield* Effect.forEach(events, mapper.consume, { discard: true })
    if (after) yield* after(mapper)
    for (const params of sent) expect(validateAcpV2("UpdateSessionNotification", params), JSON.stringify(params).slice(0, 400)).toEqual([])
    return { sent, replay: replayV2(sent) }
  }).pipe(Effect.scoped)

describe("V2 Mapping", () => {
  it.effect("generic and diff intents are tool-call content; a diff is a change with a git patch", () =>
    Effect.gen(function*() {
      const diff = { path: "/p/a.txt", oldText: "one\ntwo\nthree\n", newText: "one\nTWO\nthree\n" }
      const { replay } = yield* run([
        HarnessEvent.AgentText({ text: "Reading. " }),
        HarnessEvent.AgentText({ text: "Then editing." }),
        HarnessEvent.ToolCallStarted({ callId: "r1", pending: false, presentation: Intent.GenericCall.make({ title: "Read a.txt", kind: "read", content: [Intent.text("why")], locations: [{ path: "/p/a.txt" }] }) }),
        HarnessEvent.ToolCallCompleted({ callId: "r1", presentation: Intent.GenericResult.make({ status: "completed", content: [Intent.text("one\ntwo")] }) }),
        HarnessEvent.ToolCallStarted({ callId: "e1", pending: true, presentation: Intent.DiffCall.make({ title: "Edit a.txt", diffs: [diff] }) }),
        HarnessEvent.ToolCallRunning({ callId: "e1" }),
        HarnessEvent.ToolCallCompleted({ callId: "e1", presentation: Intent.DiffResult.make({ status: "completed", diffs: [diff, { path: "/p/new.txt", oldText: null, newText: "hi\n" }] }) }),
        HarnessEvent.AgentText({ text: "Done." })
      ])
      expect(replay.problems).toEqual([])
      expect(replay.terminals.size).toBe(0)
      expect(replay.calls.get("r1")).toMatchObject({ kind: "read", status: "completed", content: [{ type: "content", content: { type: "text", text: "one\ntwo" } }] })
      const edit = replay.calls.get("e1")!
      expect(edit.statuses).toEqual(["pending", "in_progress", "completed"])
      expect(edit.content.map((c: any) => c.changes[0].operation)).toEqual(["modify", "add"])
      expect(edit.content[0].patch.text).toBe(GitPatch.render(diff))
      expect(GitPatch.render(diff)).toBe(
        "diff --git a/p/a.txt b/p/a.txt\n--- a/p/a.txt\n+++ b/p/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
      )
      // Text chunks of one message share its id; text after a tool call is a new message.
      const ids = replay.messages.map((m) => m.messageId)
      expect(ids[0]).toBe(ids[1])
      expect(ids[2]).not.toBe(ids[1])
    }))

  it.effect("the files a call changed follow its end as appended content and locations", () =>
    Effect.gen(function*() {
      const call = Intent.TerminalCall.make({ title: "echo x > new.txt", cwd: CWD })
      const { replay } = yield* run([
        HarnessEvent.ToolCallStarted({ callId: "t1", pending: false, presentation: call }),
        HarnessEvent.ToolCallCompleted({ callId: "t1", presentation: Intent.TerminalResult.make({ output: "", exit: ExitStatus.Exited.make({ code: 0 }), statusLines: ["[exit code: 0]"] }) }),
        HarnessEvent.ToolCallFilesChanged({
          callId: "t1",
          changed: { diffs: [{ path: `${CWD}/new.txt`, oldText: null, newText: "x\n" }], notes: [Intent.text("and 3 more files changed")], locations: [{ path: `${CWD}/new.txt` }] }
        })
      ])
      expect(replay.problems).toEqual([])
      const card = replay.calls.get("t1")!
      expect(card.status).toBe("completed")
      expect(card.content.map((c: any) => c.type)).toEqual(["terminal", "diff", "content"])
      expect(card.content[1].changes).toEqual([{ operation: "add", path: `${CWD}/new.txt`, fileType: "text" }])
      expect(replay.terminals.get("t1")).toMatchObject({ exitStatus: { exitCode: 0, signal: null } })
    }))

  it.effect("a terminal without live output: its exit carries the whole output as the snapshot", () =>
    Effect.gen(function*() {
      const call = Intent.TerminalCall.make({ title: "ls", cwd: CWD })
      const { replay } = yield* run([
        HarnessEvent.ToolCallStarted({ callId: "t1", pending: false, presentation: call, cancel: Effect.void }),
        HarnessEvent.ToolCallCompleted({ callId: "t1", presentation: Intent.TerminalResult.make({ output: "a\nb\n", exit: ExitStatus.Exited.make({ code: 0 }), statusLines: ["[exit code: 0]"] }) })
      ])
      const terminal = replay.terminals.get("t1")!
      expect(terminal).toMatchObject({ command: "ls", cwd: CWD, exitStatus: { exitCode: 0, signal: null }, chunks: 0 })
      expect(terminal.bytes.toString()).toBe("a\nb\n")
      expect(replay.calls.get("t1")).toMatchObject({ status: "completed", capabilities: undefined })
    }))

  it.effect("closeOpen ends open terminals with the signal; cancels of unknown or ended calls fail with -32602", () =>
    Effect.gen(function*() {
      const call = Intent.TerminalCall.make({ title: "sleep 9", cwd: CWD })
      const errors: Array<unknown> = []
      const { replay } = yield* run([HarnessEvent.ToolCallStarted({ callId: "t1", pending: true, presentation: call, cancel: Effect.void })], (mapper) =>
        Effect.gen(function*() {
          // Pending (waiting for permission): not cancellable yet.
          errors.push(yield* Effect.flip(mapper.cancelTerminal("t1")))
          yield* mapper.consume(HarnessEvent.ToolCallRunning({ callId: "t1" }))
          yield* mapper.cancelToolCall("t1")
          yield* mapper.closeOpen({ signal: "SIGKILL" })
          errors.push(yield* Effect.flip(mapper.cancelTerminal("t1")))
          errors.push(yield* Effect.flip(mapper.cancelTerminal("zz")))
        }))
      expect(errors.map((e: any) => [e.code, e.message])).toEqual([
        [-32602, "Terminal t1 cannot be cancelled now"],
        [-32602, "Terminal t1 has already ended"],
        [-32602, "Unknown terminal: zz"]
      ])
      expect(replay.terminals.get("t1")?.exitStatus).toEqual({ exitCode: null, signal: "SIGKILL" })
      expect(replay.calls.get("t1")?.status).toBe("cancelled")
    }))

  it("permission requests name a command subject for a terminal, a tool_call subject otherwise", () => {
    const command = Permission.requestParams(SESSION, "c1", Intent.TerminalCall.make({ title: "rm -rf build", cwd: CWD }))
    expect(command.subject).toEqual({ type: "command", command: "rm -rf build", cwd: CWD, toolCallId: "c1", terminalId: "c1" })
    const other = Permission.requestParams(SESSION, "c2", Intent.GenericCall.make({ title: "Read", kind: "read" }))
    expect(other.subject).toMatchObject({ type: "tool_call", toolCall: { toolCallId: "c2", title: "Read" } })
    for (const params of [command, other]) expect(validateAcpV2("RequestPermissionRequest", params)).toEqual([])
  })
})
