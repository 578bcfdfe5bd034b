/**
 * examples/own-tools.ts as a real stdio agent: an embedder's own read and write tools next to the
 * bash tools, drawn by the bridge as a read card (with a location), a diff card, and a terminal
 * card. Every raw stdout line is validated against the ACP v1 schema; the updates are replayed as
 * Zed consumes them.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { cardsOf, protocolViolations } from "../support/agentProcess.js"
import { connectExample, type ExampleProcess, spawnExample } from "../support/exampleAgent.js"
import { replayLikeZed } from "../support/zedReplay.js"

const modes: ReadonlyArray<{ readonly name: string; readonly capabilities: acp.ClientCapabilities }> = [
  { name: "terminal cards", capabilities: { _meta: { terminal_output: true } } },
  { name: "text fallback", capabilities: {} }
]

const spawned: Array<ExampleProcess> = []
afterAll(async () => {
  await Promise.all(spawned.map((p) => p.stop()))
})

describe.each(modes)("examples/own-tools.ts over stdio ($name)", ({ name, capabilities }) => {
  it("a read card with a location, a diff card for a new and an existing file, a bash card", async () => {
    const agent = spawnExample("examples/own-tools.ts")
    spawned.push(agent)
    const client = await connectExample(agent, capabilities)
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), "dsh-own-tools-")))
    writeFileSync(join(cwd, "README.md"), "# hello\n")
    const sessionId = await client.newSession(cwd)

    const read = await client.prompt(sessionId, "read README.md")
    const [readCard] = cardsOf(read.updates)
    expect(readCard!.start).toMatchObject({ title: "Read README.md", kind: "read", locations: [{ path: join(cwd, "README.md") }] })
    expect(readCard!.start._meta).toBeUndefined()
    expect(readCard!.final).toMatchObject({
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: "# hello\n" } }],
      locations: [{ path: join(cwd, "README.md") }]
    })

    const created = await client.prompt(sessionId, "write notes.txt first")
    const replaced = await client.prompt(sessionId, "write notes.txt second")
    const [createCard] = cardsOf(created.updates)
    const [replaceCard] = cardsOf(replaced.updates)
    const notes = join(cwd, "notes.txt")
    expect(createCard!.start).toMatchObject({ title: "Write notes.txt", kind: "edit", content: [] })
    expect(createCard!.final).toMatchObject({ status: "completed", content: [{ type: "diff", path: notes, oldText: null, newText: "first" }] })
    expect(replaceCard!.final).toMatchObject({ status: "completed", content: [{ type: "diff", path: notes, oldText: "first", newText: "second" }] })
    expect(readFileSync(notes, "utf8")).toBe("second")

    const bash = await client.prompt(sessionId, "cat notes.txt; exit 2")
    const [bashCard] = cardsOf(bash.updates)
    expect(bashCard!.start).toMatchObject({ title: "cat notes.txt; exit 2", kind: "execute" })
    expect(bashCard!.final).toMatchObject({ status: "failed", rawOutput: { exit_code: 2 } })

    const replay = replayLikeZed(
      [...read.updates, ...created.updates, ...replaced.updates, ...bash.updates]
        .filter((update) => update.sessionUpdate !== "available_commands_update")
        .map((update) => ({ update }))
    )
    expect(replay.problems).toEqual([])
    const bashReplay = replay.cards.get(bashCard!.toolCallId)!
    if (name === "terminal cards") {
      expect(bashReplay.terminal).toMatchObject({ cwd, output: "second", exit: { exit_code: 2, signal: null } })
      expect(replay.cards.get(createCard!.toolCallId)!.terminal).toBeUndefined()
    } else {
      expect(replay.terminals.size).toBe(0)
      expect(bashReplay.content).toEqual([{ type: "content", content: { type: "text", text: "```console\nsecond\n[exit code: 2]\n```" } }])
    }
    expect(replay.cards.get(replaceCard!.toolCallId)!.content).toEqual([{ type: "diff", path: notes, oldText: "first", newText: "second" }])
    expect(protocolViolations(agent, client)).toEqual([])
  })
})
