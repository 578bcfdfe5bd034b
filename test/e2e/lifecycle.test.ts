/**
 * How the real `dsh-acp` process ends: Zed closes its stdin (the thread went away) or sends it a
 * signal. Either way the agent must exit promptly and take every command process with it, so
 * nothing started for a thread outlives it.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentProcess, groupGone, groupOf, type Json, protocolViolations, spawnAgent, uniqueSleep } from "../support/agentProcess.js"

/** Far above the few tens of milliseconds an exit takes, and below the bridge's 10 s cancel grace. */
const PROMPTLY_MS = 8_000

/** Initializes as Zed, opens two sessions and runs `fg` in one and `/bg <bg>` in the other. */
const busyAgent = async (dir: string, fg: string, bg: string) => {
  // Debug logs on stderr: a slow exit shows in the failure message where the time went.
  const agent = spawnAgent(["--log-level", "debug"])
  let id = 0
  const call = (method: string, params: unknown): { id: number; answer: Promise<Json> } => {
    const n = ++id
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id: n, method, params }))
    return { id: n, answer: agent.response(n) }
  }
  await call("initialize", { protocolVersion: 1, clientCapabilities: { _meta: { terminal_output: true } } }).answer
  const one = (await call("session/new", { cwd: dir, mcpServers: [] }).answer).result.sessionId
  const two = (await call("session/new", { cwd: dir, mcpServers: [] }).answer).result.sessionId
  const bgStarted = await call("session/prompt", { sessionId: two, prompt: [{ type: "text", text: `/bg ${bg}` }] }).answer
  expect(bgStarted.result?.stopReason).toBe("end_turn")
  const foreground = call("session/prompt", { sessionId: one, prompt: [{ type: "text", text: fg }] })
  // A test that kills the agent may never see this answer: only a test that awaits it fails on that.
  foreground.answer.catch(() => {})
  const groups = { fg: await groupOf(fg), bg: await groupOf(bg) }
  return { agent, foreground, groups, call, one }
}

/** Every card the agent opened got its final update (a `terminal_exit`). */
const everyCardClosed = (agent: AgentProcess) => {
  const messages = agent.stdoutLines.map((l) => JSON.parse(l))
  const updates = messages.filter((m) => m.method === "session/update").map((m) => m.params.update)
  const opened = updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.toolCallId)
  const exited = updates.filter((u) => u._meta?.terminal_exit !== undefined).map((u) => u.toolCallId)
  expect(opened).toHaveLength(2)
  expect(exited.sort()).toEqual([...opened].sort())
}

const withDir = async (run: (dir: string) => Promise<void>) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-e2e-life-")))
  try {
    await run(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe.concurrent("dsh-acp process lifecycle", () => {
  it("stdin EOF while `sleep` runs: the prompt answers cancelled, the agent exits 0 promptly, nothing survives", () =>
    withDir(async (dir) => {
      const { agent, foreground, groups } = await busyAgent(dir, uniqueSleep(201), uniqueSleep(202))
      const started = Date.now()
      agent.endStdin()
      const exit = await agent.exited
      const elapsed = Date.now() - started
      expect(exit).toEqual({ code: 0, signal: null })
      expect(elapsed, agent.stderrLines.join("\n")).toBeLessThan(PROMPTLY_MS)
      expect((await foreground.answer).result).toEqual({ stopReason: "cancelled" })
      expect(await groupGone(groups.fg)).toEqual([])
      expect(await groupGone(groups.bg)).toEqual([])
      everyCardClosed(agent)
      expect(protocolViolations(agent)).toEqual([])
    }))

  it("stdin EOF with a prompt queued behind the running one: the queued prompt never starts", () =>
    withDir(async (dir) => {
      const { agent, foreground, groups, call, one } = await busyAgent(dir, uniqueSleep(205), uniqueSleep(206))
      const queued = call("session/prompt", { sessionId: one, prompt: [{ type: "text", text: "echo queued-ran" }] })
      agent.endStdin()
      expect((await agent.exited).code).toBe(0)
      expect((await foreground.answer).result).toEqual({ stopReason: "cancelled" })
      expect((await queued.answer).result).toEqual({ stopReason: "cancelled" })
      expect(agent.stdoutLines.some((l) => l.includes("queued-ran"))).toBe(false)
      expect(await groupGone(groups.fg)).toEqual([])
      expect(protocolViolations(agent)).toEqual([])
    }))

  it("SIGTERM while `sleep` runs: the agent exits promptly and no command process survives", () =>
    withDir(async (dir) => {
      const { agent, groups } = await busyAgent(dir, uniqueSleep(203), uniqueSleep(204))
      const started = Date.now()
      agent.signal("SIGTERM")
      await agent.exited
      expect(Date.now() - started, agent.stderrLines.join("\n")).toBeLessThan(PROMPTLY_MS)
      expect(await groupGone(groups.fg)).toEqual([])
      expect(await groupGone(groups.bg)).toEqual([])
      expect(protocolViolations(agent)).toEqual([])
    }))
})
