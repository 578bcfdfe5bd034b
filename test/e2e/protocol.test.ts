/**
 * JSON-RPC edge cases through the real `dsh-acp` process: raw lines written to its stdin, no SDK in
 * between (the SDK would refuse to send most of them). After every bad line the agent must still
 * answer a valid request, and its stdout must stay pure protocol.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentProcess, cardsOf, type Json, processesByCmdline, protocolViolations, spawnAgent, uniqueSleep } from "../support/agentProcess.js"

const ZED = { _meta: { terminal_output: true, "terminal-auth": true } }

describe("dsh-acp protocol errors over raw stdio", () => {
  let agent: AgentProcess
  let dir: string
  let nextId = 100

  /** Sends one request as a raw line and waits for its response. */
  const call = (method: string, params: unknown): Promise<Json> => {
    const id = nextId++
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id, method, params }))
    return agent.response(id)
  }

  const initialize = () => call("initialize", { protocolVersion: 1, clientCapabilities: ZED })

  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-e2e-rpc-")))
    // Debug logs go to stderr: the stdout purity check below then also covers a chatty agent.
    agent = spawnAgent(["--log-level", "debug"])
  })

  afterAll(async () => {
    await agent?.stop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("refuses requests before initialize, then initializes", async () => {
    const early = await call("session/new", { cwd: dir, mcpServers: [] })
    expect(early.error?.code).toBe(-32600)
    expect(early.error.message).toMatch(/initialize/)
    const early2 = await call("session/prompt", { sessionId: "x", prompt: [] })
    expect(early2.error?.code).toBe(-32600)
    const init = await initialize()
    expect(init.result.protocolVersion).toBe(1)
  })

  it("malformed JSON → -32700 with a null id; the next request is answered", async () => {
    agent.writeLine(`{"jsonrpc":"2.0","id":1,"method":"initialize",`)
    const parseError = await agent.waitForMessage((m) => m.error?.code === -32700)
    expect(parseError.id).toBeNull()
    expect((await initialize()).result.protocolVersion).toBe(1)
  })

  it("unknown method → -32601 naming it; the next request is answered", async () => {
    const unknown = await call("session/teleport", { sessionId: "x" })
    expect(unknown.error?.code).toBe(-32601)
    expect(unknown.error.message).toContain("session/teleport")
    expect((await initialize()).result).toBeDefined()
  })

  it("unknown notifications get no reply", async () => {
    const before = agent.stdoutLines.length
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", method: "_dsh/unknown_notice", params: {} }))
    const after = await initialize()
    expect(after.result).toBeDefined()
    const between = agent.stdoutLines.slice(before).map((l) => JSON.parse(l))
    expect(between.filter((m) => m.id === undefined || m.id === null)).toEqual([])
  })

  it("invalid params (relative cwd) → -32602 naming cwd; the next request is answered", async () => {
    const relative = await call("session/new", { cwd: "relative/dir", mcpServers: [] })
    expect(relative.error?.code).toBe(-32602)
    expect(relative.error.message).toContain("cwd")
    const missing = await call("session/prompt", { sessionId: 42 })
    expect(missing.error?.code).toBe(-32602)
    const created = await call("session/new", { cwd: dir, mcpServers: [] })
    expect(created.result.sessionId).toMatch(/\S/)
  })

  it("unknown session → -32002; closing a session twice succeeds both times (documented choice)", async () => {
    const unknownPrompt = await call("session/prompt", { sessionId: "no-such-session", prompt: [{ type: "text", text: "echo hi" }] })
    expect(unknownPrompt.error?.code).toBe(-32002)
    const unknownClose = await call("session/close", { sessionId: "no-such-session" })
    expect(unknownClose.error?.code).toBe(-32002)

    const { result } = await call("session/new", { cwd: dir, mcpServers: [] })
    const ran = await call("session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text: "echo hi >&2; echo out" }] })
    expect(ran.result.stopReason).toBe("end_turn")
    expect(await call("session/close", { sessionId: result.sessionId })).toMatchObject({ result: {} })
    expect(await call("session/close", { sessionId: result.sessionId })).toMatchObject({ result: {} })
    // A closed session takes no more prompts.
    const afterClose = await call("session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text: "echo hi" }] })
    expect(afterClose.error?.code).toBe(-32002)
  })

  it("session/cancel in the same write as its prompt cancels it; a prompt queued behind it never starts", async () => {
    const { result } = await call("session/new", { cwd: dir, mcpServers: [] })
    const sessionId = result.sessionId
    const command = uniqueSleep(301)
    const [first, queued] = [nextId++, nextId++]
    const line = (value: unknown) => JSON.stringify(value)
    // One write: the agent reads the three lines in one chunk, before either prompt's handler runs.
    agent.writeLine([
      line({ jsonrpc: "2.0", id: first, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: command }] } }),
      line({ jsonrpc: "2.0", id: queued, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "echo never" }] } }),
      line({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } })
    ].join("\n"))
    expect((await agent.response(first)).result).toEqual({ stopReason: "cancelled" })
    expect((await agent.response(queued)).result).toEqual({ stopReason: "cancelled" })
    const updates = agent.stdoutLines.map((l) => JSON.parse(l)).filter((m) => m.params?.sessionId === sessionId)
    const cards = cardsOf(updates.map((m) => m.params))
    expect(cards.map((c) => c.start.title)).not.toContain("echo never")
    for (const card of cards) expect(card.final?.status, "a card the cancel closed").toBe("failed")
    expect(processesByCmdline(command)).toEqual([])
  })

  it("$/cancel_request on a running prompt answers -32800, kills the command and still closes its card", async () => {
    const { result } = await call("session/new", { cwd: dir, mcpServers: [] })
    const sessionId = result.sessionId
    const command = `echo started; ${uniqueSleep(302)}`
    const id = nextId++
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: command }] } }))
    await agent.waitForMessage((m) => m.params?.sessionId === sessionId && m.params?.update?._meta?.terminal_output?.data === "started\n")
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: id } }))
    expect((await agent.response(id)).error?.code).toBe(-32800)
    const updates = agent.stdoutLines.map((l) => JSON.parse(l)).filter((m) => m.params?.sessionId === sessionId)
    const [card] = cardsOf(updates.map((m) => m.params))
    expect(card?.final?.status).toBe("failed")
    expect(card?.final?._meta?.terminal_exit?.signal).toMatch(/^SIG/)
    expect(processesByCmdline(uniqueSleep(302))).toEqual([])
  })

  it("stdout purity: every line of the whole exchange is one valid JSON-RPC 2.0 agent message", async () => {
    // Not JSON-RPC at all, a batch and a bare value: each gets an error, none breaks the framing.
    agent.writeLine("[]")
    agent.writeLine("42")
    agent.writeLine(JSON.stringify({ jsonrpc: "1.0", id: 7, method: "initialize" }))
    expect((await initialize()).result).toBeDefined()
    expect(agent.stdoutLines.length).toBeGreaterThan(15)
    for (const line of agent.stdoutLines) {
      const message = JSON.parse(line)
      expect(message.jsonrpc).toBe("2.0")
    }
    expect(protocolViolations(agent)).toEqual([])
    expect(agent.stderrLines.length, "logs go to stderr").toBeGreaterThan(0)
  })
})
