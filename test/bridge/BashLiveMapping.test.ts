/**
 * End to end below the protocol: real commands through the live executor, their events through the
 * bash presenter and the mapper, and the updates replayed the way Zed reads them.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Bash } from "../../src/Bash/Bash.js"
import type { BashArgs } from "../../src/Tools/Bash/BashArgs.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import * as BashTool from "../../src/Tools/Bash/BashTool.js"
import { Capabilities, type TerminalMode } from "../../src/Bridge/Capabilities.js"
import { Mapping } from "../../src/Bridge/Mapping.js"
import type { SessionNotification } from "../../src/Bridge/SessionUpdate.js"
import { HarnessEvent } from "../../src/Harness/HarnessEvent.js"
import { validateAcp } from "../support/acpSchema.js"
import { replayLikeZed } from "../support/zedReplay.js"

/** Runs `args` in a fresh bash session rooted at `cwd` and maps every event; returns the updates and the raw output. */
const runMapped = (mode: TerminalMode, cwd: string, args: BashArgs) =>
  Effect.gen(function*() {
    const bash = yield* Bash
    const session = yield* bash.session({ cwd })
    const mapping = yield* Mapping
    const sent: Array<SessionNotification> = []
    const mapper = yield* mapping.forSession("s", (p) => Effect.sync(() => void sent.push(p)))
    const sessionCwd = yield* session.cwd
    let raw = ""
    let resultText = ""
    yield* mapper.consume(HarnessEvent.ToolCallStarted({ callId: "c1", presentation: BashTool.presentCall(args, { cwd: sessionCwd }), pending: false }))
    yield* session.run(args).pipe(
      Stream.runForEach((event) => {
        if (event._tag === "Output") {
          raw += event.data
          return mapper.consume(HarnessEvent.ToolOutput({ callId: "c1", data: event.data }))
        }
        resultText = event.result.text
        return mapper.consume(HarnessEvent.ToolCallCompleted({
          callId: "c1",
          presentation: BashTool.presentResult(args, event.result.text, { cwd: sessionCwd })
        }))
      })
    )
    for (const params of sent) expect(validateAcp("SessionNotification", params)).toEqual([])
    return { sent, raw, resultText }
  }).pipe(
    Effect.provide(Layer.mergeAll(BashLive.layer(), Mapping.layer.pipe(Layer.provide(Capabilities.layerFixed(mode)))))
  )

const zed: TerminalMode = { _tag: "Card", outputKey: "terminal_output" }

describe("BashLive → BashTool → Mapping", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dsh-map-"))
  fs.mkdirSync(path.join(dir, "sub"))
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it.scopedLive("a real command's card shows its raw output once, in the right directory, with its exit", () =>
    Effect.gen(function*() {
      const args: BashArgs = {
        command: "printf '\\033[32mgreen\\033[0m\\n'; for i in 1 2 3; do echo line $i; sleep 0.02; done; echo oops >&2; exit 3",
        description: "count",
        workdir: "sub"
      }
      const { raw, resultText, sent } = yield* runMapped(zed, dir, args)
      const replay = replayLikeZed(sent)
      expect(replay.problems).toEqual([])
      const terminal = replay.terminals.get("c1")!
      expect(raw).toContain("\u001b[32mgreen")
      expect(terminal.output).toBe(raw)
      // The sleeps split the output over several reads: it streamed live, not only at the end.
      expect(terminal.chunks).toBeGreaterThan(1)
      expect(terminal.cwd).toBe(path.join(dir, "sub"))
      expect(terminal.exit).toEqual({ exit_code: 3, signal: null })
      expect(replay.cards.get("c1")!.status).toBe("failed")
      expect(resultText.endsWith("[exit code: 3]")).toBe(true)
    }))

  it.scopedLive("a timed-out command ends with its signal on the card and the timeout in rawOutput", () =>
    Effect.gen(function*() {
      const { raw, sent } = yield* runMapped(zed, dir, { command: "echo started; sleep 5", timeout_ms: 300 })
      const replay = replayLikeZed(sent)
      expect(replay.problems).toEqual([])
      expect(replay.terminals.get("c1")).toMatchObject({ output: raw, exit: { exit_code: null, signal: "SIGTERM" } })
      expect(replay.cards.get("c1")!.rawOutput).toMatchObject({ timed_out: true, timed_out_after_ms: 300, signal: "SIGTERM" })
    }))

  it.scopedLive("without the capability the same command is a console block carrying the status lines", () =>
    Effect.gen(function*() {
      const { resultText, sent } = yield* runMapped({ _tag: "Text" }, dir, { command: "printf '\\033[31mred\\033[0m ```\\n'; exit 1" })
      const end = sent.at(-1)!.update as any
      expect(end.status).toBe("failed")
      expect(end.content).toHaveLength(1)
      const shown: string = end.content[0].content.text
      expect(shown).toBe(`\`\`\`\`console\n${resultText}\n\`\`\`\``)
      expect(shown).toContain("red ```\n[exit code: 1]\n")
      expect(JSON.stringify(sent)).not.toContain("terminal")
    }))
})
