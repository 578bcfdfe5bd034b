/**
 * Command classification on the wire (display only): the real agent over stdio, as Zed. A plain
 * read or search stays a terminal card with its exact command as title, and gains its kind and the
 * absolute locations of the files it names; anything compound stays `execute`.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentProcess, cardsOf, connectClient, protocolViolations, spawnAgent } from "../support/agentProcess.js"
import { replayLikeZed } from "../support/zedReplay.js"

const agents: Array<AgentProcess> = []
afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()))
})

describe("command classification over stdio (card mode)", () => {
  it("cat README.md is a read card at the README's path; rg foo src a search; cat a && rm b stays execute", async () => {
    const agent = spawnAgent()
    agents.push(agent)
    const client = await connectClient(agent, { _meta: { terminal_output: true } })
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), "dsh-classify-")))
    writeFileSync(join(cwd, "README.md"), "# readme\n")
    mkdirSync(join(cwd, "src"))
    writeFileSync(join(cwd, "a"), "a\n")
    writeFileSync(join(cwd, "b"), "b\n")
    const sessionId = await client.newSession(cwd)

    const cases = [
      { command: "cat README.md", kind: "read", locations: [{ path: join(cwd, "README.md") }] },
      { command: "sed -n '1,1p' README.md", kind: "read", locations: [{ path: join(cwd, "README.md"), line: 1 }] },
      { command: "rg foo src", kind: "search", locations: [{ path: join(cwd, "src") }] },
      { command: "cat a && rm b", kind: "execute", locations: undefined }
    ]
    const all: Array<any> = []
    for (const c of cases) {
      const { updates } = await client.prompt(sessionId, c.command)
      all.push(...updates)
      const [card] = cardsOf(updates)
      expect(card!.start).toMatchObject({ sessionUpdate: "tool_call", title: c.command, kind: c.kind })
      expect(card!.start.locations).toEqual(c.locations)
      expect(card!.start._meta.terminal_info).toEqual({ terminal_id: card!.toolCallId, cwd })
      expect(card!.final._meta.terminal_exit).toBeDefined()
    }
    const replay = replayLikeZed(all.filter((u) => u.sessionUpdate !== "available_commands_update").map((update) => ({ update })))
    expect(replay.problems).toEqual([])
    expect([...replay.terminals.values()].map((t) => t.output)).toEqual(["# readme\n", "# readme\n", expect.any(String), "a\n"])
    expect(protocolViolations(agent, client)).toEqual([])
  })
})
