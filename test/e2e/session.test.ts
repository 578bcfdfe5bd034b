/**
 * The real `dsh-acp` command over real stdio, driven by the official ACP SDK client, once as Zed
 * (advertising `_meta.terminal_output`: terminal cards) and once as a client advertising nothing
 * (the ```console text fallback). One agent process per form; the cases run concurrently, each in
 * its own session of that process, as an editor with several threads would.
 *
 * The last case of each form checks the whole wire: every raw stdout line against the ACP v1
 * schema, and that the SDK's handler saw every `session/update` the agent wrote.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  agentText,
  type AgentProcess,
  type Card,
  cardsOf,
  type Client,
  connectClient,
  groupGone,
  groupOf,
  type Json,
  protocolViolations,
  spawnAgent,
  uniqueSleep
} from "../support/agentProcess.js"

const forms = [
  { form: "card", card: true, capabilities: { _meta: { terminal_output: true, "terminal-auth": true } } },
  { form: "fallback", card: false, capabilities: {} }
] as const

type Form = (typeof forms)[number]

const FENCE = /^(`{3,})console\n([\s\S]*)\n\1$/

/** The text a fallback card's final update shows: the body of its ```console fence. */
const fencedBody = (card: Card): string => {
  const content = card.final?.content
  expect(content).toHaveLength(1)
  expect(content[0].type).toBe("content")
  expect(content[0].content.type).toBe("text")
  const match = FENCE.exec(content[0].content.text)
  expect(match, `a \`\`\`console fence: ${content[0].content.text}`).not.toBeNull()
  return match![2]!
}

/** Checks one finished card against the contract of its form; returns the output it showed. */
const expectFinished = (
  form: Form,
  card: Card,
  expected: { readonly status: "completed" | "failed"; readonly exitCode: number | null; readonly signal: string | null; readonly cwd: string }
): string => {
  const id = card.toolCallId
  expect(card.final, "the card got its final update").toBeDefined()
  expect(card.updates.at(-1), "the final update is the last of its call").toBe(card.final)
  expect(card.final.status).toBe(expected.status)
  expect(card.start.kind).toBe("execute")
  expect(card.start.status).toBe("in_progress")
  expect(card.final.rawOutput).toMatchObject({ exit_code: expected.exitCode, signal: expected.signal })
  if (form.card) {
    expect(card.start._meta?.terminal_info).toEqual({ terminal_id: id, cwd: expected.cwd })
    expect(card.start.content).toContainEqual({ type: "terminal", terminalId: id })
    expect(card.start._meta?.terminal_output).toBeUndefined()
    expect(card.start._meta?.terminal_exit).toBeUndefined()
    for (const u of card.updates) {
      expect(u._meta?.terminal_info, "terminal_info only on tool_call").toBeUndefined()
      if (u._meta?.terminal_output !== undefined) {
        expect(u._meta.terminal_output.terminal_id).toBe(id)
        expect(u.content, "terminal_output updates carry no content").toBeUndefined()
        expect(u.status).toBeUndefined()
      }
      if (u !== card.final) expect(u._meta?.terminal_exit, "terminal_exit only on the final update").toBeUndefined()
    }
    expect(card.final._meta?.terminal_output).toBeUndefined()
    expect(card.final._meta?.terminal_exit).toEqual({ terminal_id: id, exit_code: expected.exitCode, signal: expected.signal })
    expect(card.final.content, "the final update re-sends the content list").toEqual(card.start.content)
    return card.output
  }
  expect(card.start._meta?.terminal_info).toBeUndefined()
  const body = fencedBody(card)
  const exitLine = expected.signal !== null ? `[killed by signal: ${expected.signal}]` : `[exit code: ${expected.exitCode}]`
  expect(body.endsWith(exitLine), `the fence ends with ${exitLine}: ${body}`).toBe(true)
  const output = body.slice(0, body.length - exitLine.length)
  return output
}

const onlyCard = (updates: ReadonlyArray<Json>): Card => {
  const cards = cardsOf(updates)
  expect(cards).toHaveLength(1)
  return cards[0]!
}

describe.each(forms)("dsh-acp over stdio as a $form client", (form) => {
  let agent: AgentProcess
  let client: Client
  let dir: string

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-e2e-")))
    agent = spawnAgent()
    client = await connectClient(agent, form.capabilities)
  })

  afterAll(async () => {
    await agent?.stop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  const session = () => client.newSession(dir)

  it("initialize answers protocol version 1 and names the agent; session/new announces /bg /jobs /kill", async () => {
    expect(client.initializeResponse.protocolVersion).toBe(1)
    expect(client.initializeResponse.agentInfo).toMatchObject({ name: "dsh-acp", version: expect.any(String) })
    const sessionId = await session()
    expect(sessionId).toMatch(/\S/)
    const announced = await client.waitForUpdate((n) =>
      n.sessionId === sessionId && n.update.sessionUpdate === "available_commands_update"
    )
    const update = announced.update as acp.AvailableCommandsUpdate & { sessionUpdate: string }
    expect(update.availableCommands.map((c) => c.name).sort()).toEqual(["bg", "jobs", "kill"])
  })

  describe.concurrent("prompts, each in its own session", () => {
    it("`echo hi` ends the turn; the card shows hi and exit 0, completed", async () => {
      const sessionId = await session()
      const { response, updates } = await client.prompt(sessionId, "echo hi")
      expect(response.stopReason).toBe("end_turn")
      const card = onlyCard(updates)
      expect(card.start.title).toBe("echo hi")
      expect(card.start.rawInput).toEqual({ command: "echo hi" })
      expect(expectFinished(form, card, { status: "completed", exitCode: 0, signal: null, cwd: dir })).toBe("hi\n")
    })

    it("`exit 3` fails with exit code 3", async () => {
      const sessionId = await session()
      const { response, updates } = await client.prompt(sessionId, "exit 3")
      expect(response.stopReason).toBe("end_turn")
      expect(expectFinished(form, onlyCard(updates), { status: "failed", exitCode: 3, signal: null, cwd: dir })).toBe("")
    })

    it("`kill -TERM $$` fails with signal SIGTERM and no exit code", async () => {
      const sessionId = await session()
      const { updates } = await client.prompt(sessionId, "kill -TERM $$")
      expectFinished(form, onlyCard(updates), { status: "failed", exitCode: null, signal: "SIGTERM", cwd: dir })
    })

    it("`cd /tmp` persists: `pwd` in the same session prints /tmp and the card's cwd follows", async () => {
      const sessionId = await session()
      const first = await client.prompt(sessionId, "cd /tmp")
      expectFinished(form, onlyCard(first.updates), { status: "completed", exitCode: 0, signal: null, cwd: dir })
      const second = await client.prompt(sessionId, "pwd")
      expect(expectFinished(form, onlyCard(second.updates), { status: "completed", exitCode: 0, signal: null, cwd: "/tmp" }))
        .toBe("/tmp\n")
    })

    it("a command that streams for ~1 s: its output arrives once, live when the client shows cards", async () => {
      const sessionId = await session()
      const { updates } = await client.prompt(sessionId, "for i in 1 2 3 4 5; do echo $i; sleep 0.2; done")
      const card = onlyCard(updates)
      const output = expectFinished(form, card, { status: "completed", exitCode: 0, signal: null, cwd: dir })
      expect(output).toBe("1\n2\n3\n4\n5\n")
      if (form.card) {
        const live = card.updates.filter((u) => u._meta?.terminal_output !== undefined)
        expect(live.length, "more than one terminal_output before the exit").toBeGreaterThan(1)
        expect(card.updates.indexOf(live.at(-1)!)).toBeLessThan(card.updates.indexOf(card.final))
      } else {
        // The fallback sends the result once, at the end: nothing but the final update.
        expect(card.updates).toEqual([card.final])
      }
    })

    it("session/cancel while `sleep` runs: the turn answers cancelled, the card closes, no process is left", async () => {
      const sessionId = await session()
      const prompt = client.prompt(sessionId, `echo $$; ${uniqueSleep(101)}`)
      const pgid = await groupOf(uniqueSleep(101))
      await client.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === "tool_call")
      await client.agent.notify("session/cancel", { sessionId })
      const { response, updates } = await prompt
      expect(response.stopReason).toBe("cancelled")
      // No wall-clock bound (a loaded machine made one flaky): that the harness, not the bridge's
      // 10 s grace, ended the card shows in the fallback's text, which only the executor writes.
      const card = onlyCard(updates)
      expect(card.final?.status).toBe("failed")
      if (form.card) {
        expect(card.final._meta?.terminal_exit).toMatchObject({ terminal_id: card.toolCallId, exit_code: null, signal: expect.stringMatching(/^SIG/) })
        // `$$` as bash sees it: with process containment (a pid namespace) it is not the host pid,
        // so the group to check comes from /proc above.
        expect(card.output).toMatch(/^[0-9]+\n$/)
      } else {
        expect(card.final.content[0].content.text).toMatch(/^`{3,}console\n[0-9]+\n\[killed by signal: SIG[A-Z]+\]\n`{3,}$/)
      }
      expect(await groupGone(pgid)).toEqual([])
    })

    it("/bg sleep, /jobs lists bg-1 running, /kill bg-1 ends it and closes its card", async () => {
      const sessionId = await session()
      const started = await client.prompt(sessionId, `/bg ${uniqueSleep(102)}`)
      expect(started.response.stopReason).toBe("end_turn")
      expect(agentText(started.updates)).toContain("bg-1")
      const pgid = await groupOf(uniqueSleep(102))
      const start = await client.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === "tool_call")
      const callId = (start.update as acp.ToolCall).toolCallId

      const jobs = await client.prompt(sessionId, "/jobs")
      expect(agentText(jobs.updates)).toMatch(/\|\s*bg-1\s*\|\s*running\s*\|/)

      const killed = await client.prompt(sessionId, "/kill bg-1")
      expect(killed.response.stopReason).toBe("end_turn")
      expect(agentText(killed.updates)).toContain("bg-1")
      await client.waitForUpdate((n) =>
        n.sessionId === sessionId && n.update.sessionUpdate === "tool_call_update" &&
        (n.update as acp.ToolCallUpdate).toolCallId === callId && n.update.status === "failed"
      )
      const card = cardsOf(client.updates.filter((n) => n.sessionId === sessionId)).find((c) => c.toolCallId === callId)!
      expect(card.final?.status).toBe("failed")
      if (form.card) expect(card.final._meta?.terminal_exit).toMatchObject({ terminal_id: callId, exit_code: null, signal: expect.stringMatching(/^SIG/) })
      else expect(JSON.stringify(card.final)).not.toContain("terminal")
      expect(await groupGone(pgid)).toEqual([])
    })

    it("/bg sleep, then session/close kills it and its card gets its final update", async () => {
      const sessionId = await session()
      await client.prompt(sessionId, `/bg ${uniqueSleep(103)}`)
      const pgid = await groupOf(uniqueSleep(103))
      const start = await client.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === "tool_call")
      const callId = (start.update as acp.ToolCall).toolCallId
      await client.agent.request("session/close", { sessionId })
      await client.waitForUpdate((n) =>
        n.sessionId === sessionId && n.update.sessionUpdate === "tool_call_update" &&
        (n.update as acp.ToolCallUpdate).toolCallId === callId && n.update.status === "failed"
      )
      const card = cardsOf(client.updates.filter((n) => n.sessionId === sessionId)).find((c) => c.toolCallId === callId)!
      if (form.card) expect(card.final._meta?.terminal_exit).toMatchObject({ terminal_id: callId, exit_code: null })
      expect(await groupGone(pgid)).toEqual([])
    })

    it("an empty prompt and an image-only prompt get a helpful message, not an error", async () => {
      const sessionId = await session()
      const empty = await client.prompt(sessionId, "")
      expect(empty.response.stopReason).toBe("end_turn")
      expect(cardsOf(empty.updates)).toEqual([])
      expect(agentText(empty.updates)).toMatch(/empty[\s\S]*\/bg/)
      const image = await client.prompt(sessionId, [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }])
      expect(image.response.stopReason).toBe("end_turn")
      expect(cardsOf(image.updates)).toEqual([])
      expect(agentText(image.updates)).toMatch(/^An image block is not a script\.[\s\S]*\/bg/)
    })
  })

  it("the wire: every stdout line is a valid ACP agent message; the SDK saw every session/update", () => {
    // Runs after the concurrent cases: all nine cards are on the wire.
    expect(agent.stdoutLines.filter((l) => l.includes(`"sessionUpdate":"tool_call"`))).toHaveLength(9)
    expect(protocolViolations(agent, client)).toEqual([])
    if (!form.card) {
      // No terminal anywhere for a client that cannot show one.
      for (const line of agent.stdoutLines) {
        expect(line).not.toMatch(/"terminal_[a-z_]*":/)
        expect(line).not.toMatch(/"type":"terminal"/)
      }
    }
  })
})
