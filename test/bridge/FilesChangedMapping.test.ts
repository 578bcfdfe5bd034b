/** The files a call changed, added to its card after its end, in each form a client can show. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as StatusLines from "../../src/Bash/StatusLines.js"
import { Capabilities, type TerminalMode } from "../../src/Bridge/Capabilities.js"
import { Mapping } from "../../src/Bridge/Mapping.js"
import type { SessionNotification } from "../../src/Bridge/SessionUpdate.js"
import { HarnessEvent } from "../../src/Harness/HarnessEvent.js"
import * as Intent from "../../src/Presentation/Intent.js"
import * as ExitStatus from "../../src/Terminal/ExitStatus.js"
import * as BashTool from "../../src/Tools/Bash/BashTool.js"
import { validateAcp } from "../support/acpSchema.js"
import { replayLikeZed } from "../support/zedReplay.js"

const CWD = "/home/u/project"
const args = { command: "printf 'b\\n' >> a.txt", description: "append" }
const changed: Intent.ChangedFiles = {
  diffs: [{ path: `${CWD}/a.txt`, oldText: "a\n", newText: "a\nb\n" }],
  notes: [Intent.text(`${CWD}/logo.png: binary file, not shown`)],
  locations: [{ path: `${CWD}/a.txt` }, { path: `${CWD}/logo.png` }]
}

const mapAll = (mode: TerminalMode, events: ReadonlyArray<HarnessEvent>) =>
  Effect.gen(function*() {
    const sent: Array<SessionNotification> = []
    const mapper = yield* (yield* Mapping).forSession("s", (params) => Effect.sync(() => void sent.push(params)))
    yield* Effect.forEach(events, mapper.consume, { discard: true })
    return sent
  }).pipe(Effect.scoped, Effect.provide(Mapping.layer.pipe(Layer.provide(Capabilities.layerFixed(mode)))))

const call = (changes: Intent.ChangedFiles) => [
  HarnessEvent.ToolCallStarted({ callId: "c", presentation: BashTool.presentCall(args, { cwd: CWD }), pending: false }),
  HarnessEvent.ToolOutput({ callId: "c", data: "done\n" }),
  HarnessEvent.ToolCallCompleted({
    callId: "c",
    presentation: BashTool.presentResult(args, StatusLines.render({ output: "done\n", end: ExitStatus.exited(0) }), { cwd: CWD })
  }),
  HarnessEvent.ToolCallFilesChanged({ callId: "c", changed: changes })
]

describe("Mapping: files a call changed", () => {
  it.effect("card: the exit goes out first; then the content again (terminal kept first), the diffs, the notes, the locations", () =>
    Effect.gen(function*() {
      const sent = yield* mapAll({ _tag: "Card", outputKey: "terminal_output" }, call(changed))
      for (const params of sent) expect(validateAcp("SessionNotification", params)).toEqual([])
      const updates = sent.map((n) => n.update as any)
      const exitAt = updates.findIndex((u) => u._meta?.terminal_exit !== undefined)
      expect(exitAt).toBe(updates.length - 2)
      expect(updates.at(-1)).toEqual({
        sessionUpdate: "tool_call_update",
        toolCallId: "c",
        content: [
          { type: "content", content: { type: "text", text: "append" } },
          { type: "terminal", terminalId: "c" },
          { type: "diff", path: `${CWD}/a.txt`, oldText: "a\n", newText: "a\nb\n" },
          { type: "content", content: { type: "text", text: `${CWD}/logo.png: binary file, not shown` } }
        ],
        locations: changed.locations
      })
      const replay = replayLikeZed(sent)
      expect(replay.problems).toEqual([])
      expect(replay.cards.get("c")!.terminal).toMatchObject({ output: "done\n", exit: { exit_code: 0, signal: null } })
      expect(replay.cards.get("c")!.status).toBe("completed")
    }))

  it.effect("text fallback: the diffs follow the console block", () =>
    Effect.gen(function*() {
      const sent = yield* mapAll({ _tag: "Text" }, call(changed))
      for (const params of sent) expect(validateAcp("SessionNotification", params)).toEqual([])
      expect((sent.at(-1)!.update as any).content).toEqual([
        { type: "content", content: { type: "text", text: "```console\ndone\n[exit code: 0]\n```" } },
        { type: "diff", path: `${CWD}/a.txt`, oldText: "a\n", newText: "a\nb\n" },
        { type: "content", content: { type: "text", text: `${CWD}/logo.png: binary file, not shown` } }
      ])
      expect(JSON.stringify(sent)).not.toContain("terminal")
    }))

  it.effect("nothing changed: no extra update", () =>
    Effect.gen(function*() {
      const sent = yield* mapAll({ _tag: "Card", outputKey: "terminal_output" }, call({ diffs: [], notes: [], locations: [] }))
      expect((sent.at(-1)!.update as any)._meta?.terminal_exit).toBeDefined()
    }))

  it.effect("the card's own locations are kept when the changed files' are added (locations replace)", () =>
    Effect.gen(function*() {
      const call = Intent.TerminalCall.make({ title: "tee a.txt < README.md", cwd: CWD, kind: "read", locations: [{ path: `${CWD}/README.md` }] })
      const sent = yield* mapAll({ _tag: "Card", outputKey: "terminal_output" }, [
        HarnessEvent.ToolCallStarted({ callId: "c", presentation: call, pending: false }),
        HarnessEvent.ToolCallCompleted({ callId: "c", presentation: BashTool.presentResult(args, "[exit code: 0]", { cwd: CWD }) }),
        HarnessEvent.ToolCallFilesChanged({ callId: "c", changed })
      ])
      expect((sent.at(-1)!.update as any).locations).toEqual([{ path: `${CWD}/README.md` }, ...changed.locations])
    }))
})
