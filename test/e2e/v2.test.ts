/**
 * ACP v2 end to end: the real agent over real stdio, a raw-line v2 client, real bash. Each test
 * replays the session as a v2 client must (patches, snapshot-replace, chunk-append, exit apart from
 * the call's status) and validates every stdout line against the official v2 JSON Schema.
 */
import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { eventually, processesByCmdline, spawnAgent, uniqueSleep } from "../support/agentProcess.js"
import { connectV2, type V2Client } from "../support/v2Client.js"
import { replayV2 } from "../support/v2Replay.js"

const withV2 = async (run: (client: V2Client, dir: string) => Promise<void>) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-e2e-v2-")))
  const agent = spawnAgent()
  try {
    const client = await connectV2(agent)
    await run(client, dir)
    expect(client.violations()).toEqual([])
  } finally {
    await agent.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

describe.concurrent("ACP v2 over stdio", () => {
  it("negotiates v2 only when offered: v2 shapes for a v2 client; a v1 client gets v1 and no v2 methods", async () => {
    await withV2(async (client) => {
      const init = JSON.parse(client.agent.stdoutLines[0]!)
      expect(init.result).toMatchObject({ protocolVersion: 2, info: { name: "dsh-acp" }, authMethods: [] })
      expect(init.result.agentCapabilities).toBeUndefined()
    })
    // A client offering a later version still gets 2, the highest this agent speaks.
    const later = spawnAgent()
    try {
      later.writeLine(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 7, info: { name: "x", version: "1" } } }))
      expect((await later.response(1)).result.protocolVersion).toBe(2)
    } finally {
      await later.stop()
    }
    const v1 = spawnAgent()
    try {
      v1.writeLine(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }))
      expect((await v1.response(1)).result).toMatchObject({ protocolVersion: 1, agentCapabilities: { loadSession: true } })
      v1.writeLine(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "terminal/cancel", params: { sessionId: "s", terminalId: "t" } }))
      expect(v1.stdoutLines).not.toContain("")
      expect(await v1.response(2)).toEqual({ jsonrpc: "2.0", id: 2, error: { code: -32601, message: "Method not found: terminal/cancel" } })
    } finally {
      await v1.stop()
    }
  })

  it("a command's terminal replays to its exact bytes (invalid UTF-8 and ANSI included) and its exit", () =>
    withV2(async (client, dir) => {
      const sessionId = await client.newSession(dir)
      const command = `printf 'one\\n\\033[31mred\\033[0m\\r\\n'; printf '\\377\\376\\303'; exit 3`
      const { ack, stopReason } = await client.prompt(sessionId, command)
      expect(typeof ack.result.messageId).toBe("string")
      expect(stopReason).toBe("end_turn")
      const replay = replayV2(client.updates(sessionId))
      expect(replay.problems).toEqual([])
      expect([...replay.terminals.values()]).toHaveLength(1)
      const terminal = [...replay.terminals.values()][0]!
      expect(terminal.command).toBe(command)
      expect(terminal.cwd).toBe(dir)
      expect(terminal.bytes).toEqual(Buffer.from("one\n\x1b[31mred\x1b[0m\r\n\xff\xfe\xc3", "latin1"))
      expect(terminal.exitStatus).toEqual({ exitCode: 3, signal: null })
      expect(terminal.capabilities).toBeUndefined()
      expect(terminal.afterExit).toBe(0)
      const call = replay.calls.get(terminal.id)!
      expect(call).toMatchObject({ title: command, kind: "execute", status: "failed", rawOutput: { exit_code: 3 } })
      expect(call.content).toEqual([{ type: "terminal", terminalId: terminal.id }])
      expect(call.statuses).toEqual(["in_progress", "failed"])
      expect(replay.states.map((s) => s.state)).toEqual(["running", "idle"])
      // The turn's progress: nothing of the call before `running`, nothing after `idle`.
      const kinds = client.updates(sessionId).map((p) => p.update.sessionUpdate)
      expect(kinds.indexOf("state_update")).toBeLessThan(kinds.indexOf("terminal_update"))
      expect(kinds.at(-1)).toBe("state_update")
      // `cd` persists across prompts in v2 as in v1.
      await client.prompt(sessionId, "mkdir -p sub && cd sub")
      await client.prompt(sessionId, "pwd")
      const last = [...replayV2(client.updates(sessionId)).terminals.values()].at(-1)!
      expect(last.bytes.toString("utf8")).toBe(`${dir}/sub\n`)
      expect(last.cwd).toBe(`${dir}/sub`)
    }))

  it("a 2 MiB output of random bytes arrives byte-exact, base64 chunks concatenated", () =>
    withV2(async (client, dir) => {
      const sessionId = await client.newSession(dir)
      await client.prompt(sessionId, "head -c 2097152 /dev/urandom > blob.bin")
      const { stopReason } = await client.prompt(sessionId, "cat blob.bin")
      expect(stopReason).toBe("end_turn")
      const replay = replayV2(client.updates(sessionId))
      const terminal = [...replay.terminals.values()].at(-1)!
      expect(terminal.exitStatus).toEqual({ exitCode: 0, signal: null })
      expect(terminal.bytes.length).toBe(2 * 1024 * 1024)
      expect(sha(terminal.bytes)).toBe(sha(readFileSync(join(dir, "blob.bin"))))
      expect(terminal.chunks).toBeGreaterThan(0)
    }))

  it("terminal/cancel stops that command alone within the kill sequence; the turn goes on; a second cancel is an error", () =>
    withV2(async (client, dir) => {
      const sessionId = await client.newSession(dir)
      const sleep = uniqueSleep(501)
      const turn = client.prompt(sessionId, `echo before; ${sleep}; echo after`)
      const running = await client.waitForUpdate(sessionId, (u) => u.sessionUpdate === "terminal_update" && u.capabilities?.cancel !== undefined)
      const terminalId = running.update.terminalId
      await eventually("the sleep runs", () => (processesByCmdline(sleep).length > 0 ? true : undefined))
      const answer = await client.request("terminal/cancel", { sessionId, terminalId })
      expect(answer.result).toEqual({})
      const { stopReason } = await turn
      // The turn was not cancelled: only the command was.
      expect(stopReason).toBe("end_turn")
      const replay = replayV2(client.updates(sessionId))
      const terminal = replay.terminals.get(terminalId)!
      expect(["SIGTERM", "SIGKILL"]).toContain(terminal.exitStatus?.signal)
      expect(terminal.exitStatus?.exitCode).toBeNull()
      expect(terminal.bytes.toString()).toBe("before\n")
      expect(terminal.capabilities).toBeUndefined()
      // Cancelling a terminal leaves its call's status to the command's end.
      expect(replay.calls.get(terminalId)?.status).toBe("failed")
      expect(processesByCmdline(sleep)).toEqual([])
      // The answer came at once, before the exit it confirms.
      const lines = client.agent.stdoutLines
      const answerAt = lines.findIndex((l) => l.includes(`"id":${answer.id},`))
      const exitAt = lines.findIndex((l) => l.includes("exitStatus") && l.includes(terminalId))
      expect(answerAt).toBeLessThan(exitAt)
      // Finished, unknown, unknown session, bad params: clear errors, and the agent keeps serving.
      expect((await client.request("terminal/cancel", { sessionId, terminalId })).error).toMatchObject({ code: -32602, message: `Terminal ${terminalId} has already ended` })
      expect((await client.request("terminal/cancel", { sessionId, terminalId: "nope" })).error).toMatchObject({ code: -32602, message: "Unknown terminal: nope" })
      expect((await client.request("terminal/cancel", { sessionId: "nope", terminalId })).error).toMatchObject({ code: -32002 })
      expect((await client.request("terminal/cancel", { sessionId })).error).toMatchObject({ code: -32602 })
      expect((await client.request("tool_call/cancel", { sessionId, toolCallId: terminalId })).error).toMatchObject({ code: -32602 })
      expect((await client.prompt(sessionId, "echo still here")).stopReason).toBe("end_turn")
    }))

  it("tool_call/cancel stops the call's command; the call ends `cancelled`, its terminal with the signal", () =>
    withV2(async (client, dir) => {
      const sessionId = await client.newSession(dir)
      const sleep = uniqueSleep(502)
      const turn = client.prompt(sessionId, sleep)
      const running = await client.waitForUpdate(sessionId, (u) => u.sessionUpdate === "tool_call_update" && u.capabilities?.cancel !== undefined)
      const toolCallId = running.update.toolCallId
      await eventually("the sleep runs", () => (processesByCmdline(sleep).length > 0 ? true : undefined))
      expect((await client.request("tool_call/cancel", { sessionId, toolCallId })).result).toEqual({})
      expect((await turn).stopReason).toBe("end_turn")
      const replay = replayV2(client.updates(sessionId))
      expect(replay.calls.get(toolCallId)?.status).toBe("cancelled")
      expect(["SIGTERM", "SIGKILL"]).toContain(replay.terminals.get(toolCallId)?.exitStatus?.signal)
      expect(processesByCmdline(sleep)).toEqual([])
    }))

  it("a /bg task is listed as a background terminal and ends with its own exit; its Stop works between turns", () =>
    withV2(async (client, dir) => {
      const sessionId = await client.newSession(dir)
      await client.prompt(sessionId, "/bg sleep 3; echo done; exit 4")
      const replay = replayV2(client.updates(sessionId))
      const idle = replay.states.at(-1)!
      expect(idle).toMatchObject({ state: "idle", stopReason: "end_turn" })
      expect(idle.background).toHaveLength(1)
      const terminalId = idle.background![0].terminalId
      expect(idle.background![0].type).toBe("terminal")
      await client.waitForUpdate(sessionId, (u) => u.sessionUpdate === "terminal_update" && u.terminalId === terminalId && u.exitStatus != null)
      // Its end updates the idle listing (no stop reason: no foreground work ended).
      const after = await client.waitForUpdate(sessionId, (u) => u.sessionUpdate === "state_update" && u.state === "idle" && u.stopReason === undefined, 30_000)
      expect(after.update).toEqual({ sessionUpdate: "state_update", state: "idle", background: [] })
      const ended = replayV2(client.updates(sessionId)).terminals.get(terminalId)!
      expect(ended.exitStatus).toEqual({ exitCode: 4, signal: null })
      expect(ended.bytes.toString()).toBe("done\n")

      // A second task, stopped by its terminal's Stop while no turn runs.
      const sleep = uniqueSleep(503)
      await client.prompt(sessionId, `/bg ${sleep}`)
      const listed = replayV2(client.updates(sessionId)).states.at(-1)!.background!
      expect(listed).toHaveLength(1)
      expect((await client.request("terminal/cancel", { sessionId, terminalId: listed[0].terminalId })).result).toEqual({})
      await client.waitForUpdate(sessionId, (u) => u.sessionUpdate === "terminal_update" && u.terminalId === listed[0].terminalId && u.exitStatus != null)
      expect(["SIGTERM", "SIGKILL"]).toContain(replayV2(client.updates(sessionId)).terminals.get(listed[0].terminalId)?.exitStatus?.signal)
      expect(processesByCmdline(sleep)).toEqual([])
    }))

  it("session/cancel cancels the turn (idle `cancelled`); session/close sends nothing after its answer", () =>
    withV2(async (client, dir) => {
      const sessionId = await client.newSession(dir)
      const sleep = uniqueSleep(504)
      const turn = client.prompt(sessionId, sleep)
      await eventually("the sleep runs", () => (processesByCmdline(sleep).length > 0 ? true : undefined))
      client.notify("session/cancel", { sessionId })
      expect((await turn).stopReason).toBe("cancelled")
      const replay = replayV2(client.updates(sessionId))
      expect([...replay.terminals.values()][0]?.exitStatus?.signal).toMatch(/^SIG(TERM|KILL)$/)

      const bg = uniqueSleep(505)
      await client.prompt(sessionId, `/bg ${bg}`)
      const closed = await client.request("session/close", { sessionId })
      expect(closed.result).toEqual({})
      const lines = client.agent.stdoutLines
      const closedAt = lines.findIndex((l) => l.includes(`"id":${closed.id},`))
      expect(lines.slice(closedAt + 1).filter((l) => l.includes(sessionId))).toEqual([])
      // The background task was killed and its terminal ended before the answer.
      expect(replayV2(client.updates(sessionId)).problems).toEqual([])
      expect([...replayV2(client.updates(sessionId)).terminals.values()].every((t) => t.exitStatus !== undefined)).toBe(true)
      expect(processesByCmdline(bg)).toEqual([])
    }))
})
