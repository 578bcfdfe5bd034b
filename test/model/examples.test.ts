/**
 * The examples as real stdio agents (`node --import tsx examples/….ts`), driven by the official ACP
 * SDK client, every raw stdout line validated against the ACP v1 schema, in both capability modes:
 * terminal cards (`_meta.terminal_output`) and the text fallback.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { agentText, cardsOf, type Json, protocolViolations } from "../support/agentProcess.js"
import { connectExample, type Decide, type ExampleProcess, spawnExample } from "../support/exampleAgent.js"
import { processesRunning } from "./support.js"

const modes: ReadonlyArray<{ readonly name: string; readonly capabilities: acp.ClientCapabilities }> = [
  { name: "terminal cards", capabilities: { _meta: { terminal_output: true } } },
  { name: "text fallback", capabilities: {} }
]

const spawned: Array<ExampleProcess> = []
afterAll(async () => {
  await Promise.all(spawned.map((p) => p.stop()))
})

const start = async (script: string, capabilities: acp.ClientCapabilities, decide?: Decide) => {
  const agent = spawnExample(script)
  spawned.push(agent)
  const client = await connectExample(agent, capabilities, decide)
  const sessionId = await client.newSession(mkdtempSync(join(tmpdir(), "dsh-example-")))
  return { agent, client, sessionId }
}

/** The wire of one turn, as the client saw it: requests, permission asks, updates, the response. */
const transcript = (agent: ExampleProcess, from: number) =>
  agent.wire.slice(from).filter((line) => !line.includes("available_commands_update")).join("\n")

describe.each(modes)("examples/own-model.ts over stdio ($name)", ({ name, capabilities }) => {
  it("a two-step model turn: permission, a live card, the result back to the model, its answer", async () => {
    const { agent, client, sessionId } = await start("examples/own-model.ts", capabilities)
    const from = agent.wire.length
    const { response, updates } = await client.prompt(sessionId, "echo hi; exit 3")
    if (name === "terminal cards") console.log(`--- two-step model turn (${name}) ---\n${transcript(agent, from)}\n---`)

    expect(response.stopReason).toBe("end_turn")
    expect(agentText(updates)).toBe("Running it.\nThe command ended: [exit code: 3]")
    expect(client.permissions).toHaveLength(1)
    // The pending card is on the wire before the permission request that names it.
    const toolCallLine = agent.stdoutLines.findIndex((l) => l.includes(`"sessionUpdate":"tool_call"`))
    const permissionLine = agent.stdoutLines.findIndex((l) => l.includes(`"session/request_permission"`))
    expect(toolCallLine).toBeGreaterThanOrEqual(0)
    expect(toolCallLine).toBeLessThan(permissionLine)
    expect(client.permissions[0]!.toolCall).toMatchObject({ title: "echo hi; exit 3", status: "pending" })
    const [card, ...others] = cardsOf(updates)
    expect(others).toEqual([])
    expect(card!.start).toMatchObject({ sessionUpdate: "tool_call", title: "echo hi; exit 3", kind: "execute", status: "pending" })
    expect(card!.updates.some((u: Json) => u.status === "in_progress")).toBe(true)
    expect(card!.final).toMatchObject({ status: "failed", rawOutput: { exit_code: 3 } })
    if (name === "terminal cards") {
      expect(card!.start._meta.terminal_info).toMatchObject({ terminal_id: card!.toolCallId })
      expect(card!.output).toBe("hi\n")
      expect(card!.final._meta.terminal_exit).toMatchObject({ exit_code: 3, signal: null })
    } else {
      expect(card!.start._meta?.terminal_info).toBeUndefined()
      expect(JSON.stringify(card!.final.content)).toContain("hi\\n[exit code: 3]")
    }
    expect(protocolViolations(agent, client)).toEqual([])
  })

  it("a rejected command does not run; cancel during a command kills it and closes its card", async () => {
    let answer: "reject" | "allow_once" = "reject"
    const { agent, client, sessionId } = await start("examples/own-model.ts", capabilities, () => answer)
    const rejected = await client.prompt(sessionId, "echo should-not-run")
    expect(rejected.response.stopReason).toBe("end_turn")
    expect(cardsOf(rejected.updates)[0]!.final).toMatchObject({ status: "failed" })
    expect(agentText(rejected.updates)).toMatch(/The user rejected this command/)
    expect(JSON.stringify(rejected.updates)).not.toContain("should-not-run\\n")

    answer = "allow_once"
    const turn = client.prompt(sessionId, "echo started; sleep 34.5")
    await client.waitForUpdate((n) => (n.update as Json).status === "in_progress")
    await new Promise((resolve) => setTimeout(resolve, 200))
    await client.cancel(sessionId)
    const cancelled = await turn
    expect(cancelled.response.stopReason).toBe("cancelled")
    const card = cardsOf(cancelled.updates)[0]!
    expect(card.final).toMatchObject({ status: "failed" })
    expect(card.final.rawOutput.signal).toMatch(/^SIG(TERM|KILL)$/)
    expect(processesRunning("sleep 34.5")).toEqual([])

    // The session stays usable after the cancel.
    const after = await client.prompt(sessionId, "echo again")
    expect(after.response.stopReason).toBe("end_turn")
    expect(agentText(after.updates)).toBe("Running it.\nThe command ended: [exit code: 0]")
    expect(protocolViolations(agent, client)).toEqual([])
  })
})

describe.each(modes)("examples/custom-harness.ts over stdio ($name)", ({ name, capabilities }) => {
  it("one card per line, then a summary", async () => {
    const { agent, client, sessionId } = await start("examples/custom-harness.ts", capabilities)
    const { response, updates } = await client.prompt(sessionId, "echo one\nfalse\n")
    expect(response.stopReason).toBe("end_turn")
    const cards = cardsOf(updates)
    expect(cards.map((c) => [c.start.title, c.final?.status])).toEqual([["echo one", "completed"], ["false", "failed"]])
    if (name === "terminal cards") expect(cards[0]!.output).toBe("one\n")
    expect(agentText(updates)).toBe("1 succeeded, 1 failed.")
    expect(client.permissions).toEqual([])
    expect(protocolViolations(agent, client)).toEqual([])
  })
})
