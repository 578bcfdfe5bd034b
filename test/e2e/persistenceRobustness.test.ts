/**
 * The persisted-session methods against bad input and bad files, over stdio: a torn last line
 * loads, a foreign or corrupt file is refused with a clear error (and the agent keeps serving), a
 * session held by another live agent is refused, `session/resume` continues without replay,
 * `session/delete` removes the file, the files are private, and `--no-persist` writes nothing.
 */
import * as acp from "@agentclientprotocol/sdk"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { appendFileSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentProcess, type Client, connectClient, eventually, type Json, protocolViolations, spawnAgent, uniqueSleep } from "../support/agentProcess.js"
import { replayLikeZed } from "../support/zedReplay.js"
import { sandboxProblem } from "../bash/helpers.js"

const dirs: Array<string> = []
const agents: Array<AgentProcess> = []
afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()))
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
const tempDir = (prefix: string) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)))
  dirs.push(dir)
  return dir
}
const start = async (state: string, args: ReadonlyArray<string> = []) => {
  const agent = spawnAgent(["--log-level", "warning", ...args], { XDG_STATE_HOME: state })
  agents.push(agent)
  return { agent, client: await connectClient(agent, { _meta: { terminal_output: true } }) }
}
const sessionsDir = (state: string) => join(state, "dsh-acp", "sessions")

/** The JSON-RPC error a request failed with. */
const errorOf = async (request: Promise<unknown>): Promise<{ code: number; message: string }> => {
  try {
    await request
  } catch (error) {
    return error as { code: number; message: string }
  }
  throw new Error("the request succeeded")
}
const commandUpdates = (client: Client, sessionId: string) =>
  client.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === "available_commands_update").length
/** `session/load`, then the session's commands, which follow the response (so counts of updates are complete). */
const load = async (client: Client, sessionId: string, cwd: string) => {
  const before = commandUpdates(client, sessionId)
  const response = await client.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] })
  await eventually("the commands update after the load", () => (commandUpdates(client, sessionId) > before ? true : undefined))
  return response
}

/** A session with one prompt, its agent stopped (cleanly): its id. */
const recorded = async (state: string, project: string, script = "echo one") => {
  const { agent, client } = await start(state)
  const sessionId = await client.newSession(project)
  await client.prompt(sessionId, script)
  await agent.stop()
  return sessionId
}

describe("persisted sessions: bad files and bad requests", () => {
  it("files are private; a torn last line is skipped with a log line and the session loads", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const sessionId = await recorded(state, project)
    const log = join(sessionsDir(state), `${sessionId}.jsonl`)
    expect(statSync(sessionsDir(state)).mode & 0o777).toBe(0o700)
    expect(statSync(log).mode & 0o777).toBe(0o600)
    appendFileSync(log, `{"t":"event","e":{"_tag":"AgentText","te`)

    const { agent, client } = await start(state)
    await load(client, sessionId, project)
    expect(agent.stderrLines.some((l) => l.includes("torn"))).toBe(true)
    const next = await client.prompt(sessionId, "echo two")
    expect(next.response.stopReason).toBe("end_turn")
    // The torn bytes were cut off before the log grew again: every line of it is whole JSON.
    for (const line of readFileSync(log, "utf8").trimEnd().split("\n")) expect(() => JSON.parse(line)).not.toThrow()
    expect(protocolViolations(agent, client)).toEqual([])
  })

  it("a foreign file, a corrupt file and a newer version are refused; the agent keeps serving", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const corrupt = await recorded(state, project)
    const newer = await recorded(state, project)
    const dir = sessionsDir(state)
    const lines = readFileSync(join(dir, `${corrupt}.jsonl`), "utf8").split("\n")
    lines.splice(2, 0, "#!/bin/sh rm -rf ~")
    writeFileSync(join(dir, `${corrupt}.jsonl`), lines.join("\n"))
    const newerText = readFileSync(join(dir, `${newer}.jsonl`), "utf8")
    writeFileSync(join(dir, `${newer}.jsonl`), newerText.replace(`"v":1`, `"v":99`))
    writeFileSync(join(dir, "dsh-foreign.jsonl"), "echo pwned\n", { mode: 0o600 })

    const { agent, client } = await start(state)
    const foreign = await errorOf(load(client, "dsh-foreign", project))
    expect(foreign.code).toBe(-32603)
    expect(foreign.message).toContain("not a dsh-acp session log")
    const broken = await errorOf(load(client, corrupt, project))
    expect(broken.message).toContain("corrupt at line 3")
    const future = await errorOf(load(client, newer, project))
    expect(future.message).toContain("newer dsh-acp")
    // Unknown, malformed and mismatched requests.
    expect((await errorOf(load(client, "dsh-nope", project))).code).toBe(-32002)
    expect((await errorOf(load(client, "../../etc/passwd", project))).code).toBe(-32002)
    const listed = await client.agent.request(acp.methods.agent.session.list, {})
    // Neither the foreign file nor the newer one is listed; the corrupt one's header and title still read.
    expect(listed.sessions.map((s) => s.sessionId)).toEqual([corrupt])
    expect((await errorOf(client.agent.request(acp.methods.agent.session.list, { cursor: "nonsense" }))).code).toBe(-32602)
    // Still serving.
    const fresh = await client.newSession(project)
    expect((await client.prompt(fresh, "echo alive")).response.stopReason).toBe("end_turn")
    expect(protocolViolations(agent, client)).toEqual([])
  })

  it("a session held by another live agent is refused; resume continues it without replay; delete removes it", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const sessionId = await recorded(state, project, "mkdir -p deeper && cd deeper")
    const a = await start(state)
    const b = await start(state)
    await a.client.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: project })
    expect(a.client.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate !== "available_commands_update")).toEqual([])
    const held = await errorOf(load(b.client, sessionId, project))
    expect(held.message).toContain(`open in another dsh-acp process (pid ${a.agent.pid})`)
    const notDeleted = await errorOf(b.client.agent.request(acp.methods.agent.session.delete, { sessionId }))
    expect(notDeleted.message).toContain("not deleted")
    const wrongCwd = await errorOf(b.client.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: tempDir("dsh-x-") }))
    expect(wrongCwd.code).toBe(-32602)

    const pwd = await a.client.prompt(sessionId, "pwd")
    const output = pwd.updates.map((u) => JSON.stringify(u)).join("")
    expect(output).toContain(`${project}/deeper`)
    await a.client.agent.request(acp.methods.agent.session.delete, { sessionId })
    expect(existsSync(join(sessionsDir(state), `${sessionId}.jsonl`))).toBe(false)
    expect(existsSync(join(sessionsDir(state), `${sessionId}.lock`))).toBe(false)
    expect((await errorOf(load(b.client, sessionId, project))).code).toBe(-32002)
    expect((await a.client.agent.request(acp.methods.agent.session.list, {})).sessions).toEqual([])
    expect(protocolViolations(a.agent, a.client)).toEqual([])
    expect(protocolViolations(b.agent, b.client)).toEqual([])
  })

  it("a log past its bound keeps its newest turns; the load says the oldest were dropped", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const agent = spawnAgent([], { XDG_STATE_HOME: state, DSH_ACP_PERSIST_MAX_BYTES: "40000" })
    agents.push(agent)
    const client = await connectClient(agent, { _meta: { terminal_output: true } })
    const sessionId = await client.newSession(project)
    for (let n = 1; n <= 6; n++) await client.prompt(sessionId, `echo turn-${n}; head -c 6000 /dev/zero | tr '\\0' x`)
    await agent.stop()
    expect(statSync(join(sessionsDir(state), `${sessionId}.jsonl`)).size).toBeLessThan(40000)

    const next = await start(state)
    await load(next.client, sessionId, project)
    const updates = next.client.updates.filter((n) => n.sessionId === sessionId)
    const texts = updates.map((n) => n.update as Json).flatMap((u) => (u.content?.type === "text" ? [u.content.text as string] : []))
    expect(texts.some((t) => t.includes("dropped from this session's log"))).toBe(true)
    expect(texts).toContain(`echo turn-6; head -c 6000 /dev/zero | tr '\\0' x`)
    expect(texts).not.toContain(`echo turn-1; head -c 6000 /dev/zero | tr '\\0' x`)
    expect(protocolViolations(next.agent, next.client)).toEqual([])
  })

  it("loading a session live in this process replays it and leaves its running task open for its live updates", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const { agent, client } = await start(state)
    const sessionId = await client.newSession(project)
    await client.prompt(sessionId, `/bg echo live-task; ${uniqueSleep(7)}`)
    await client.waitForUpdate((n) => JSON.stringify(n.update).includes("live-task\\n"))
    const from = client.updates.length
    await load(client, sessionId, project)
    const ofSession = () => client.updates.slice(from).filter((n) => n.sessionId === sessionId && n.update.sessionUpdate !== "available_commands_update")
    const replayed = replayLikeZed(ofSession())
    expect(replayed.problems).toEqual([])
    const [task] = [...replayed.cards.values()]
    expect(task!.status).toBe("in_progress")
    expect(task!.terminal).toMatchObject({ output: "live-task\n", exit: undefined })
    await client.prompt(sessionId, "/kill bg-1")
    await client.waitForUpdate((n) => n.update.sessionUpdate === "tool_call_update" && n.update.toolCallId === task!.toolCallId && n.update.status === "failed")
    const after = replayLikeZed(ofSession())
    expect(after.problems).toEqual([])
    expect(after.cards.get(task!.toolCallId)!.terminal!.exit).toEqual({ exit_code: null, signal: "SIGTERM" })
    expect(protocolViolations(agent, client)).toEqual([])
  })

  it.skipIf(sandboxProblem !== undefined)("the session's mode is persisted: a loaded session answers it and runs under it", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const first = await start(state)
    const sessionId = await first.client.newSession(project)
    await first.client.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "read-only" })
    await first.client.prompt(sessionId, "echo in read-only")
    await first.agent.stop()

    const { agent, client } = await start(state)
    const before = commandUpdates(client, sessionId)
    const response: Json = await client.agent.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] })
    await eventually("the commands update after the load", () => (commandUpdates(client, sessionId) > before ? true : undefined))
    expect(response.modes.currentModeId).toBe("read-only")
    expect(response.configOptions[0].currentValue).toBe("read-only")
    const write = await client.prompt(sessionId, "touch written-here")
    expect(JSON.stringify(write.updates)).toContain('"status":"failed"')
    expect(existsSync(join(project, "written-here"))).toBe(false)
    expect(protocolViolations(agent, client)).toEqual([])
  })

  it("an ACP v2 connection keeps its sessions in memory: nothing is written, the v1 session methods are not served", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const agent = spawnAgent([], { XDG_STATE_HOME: state })
    agents.push(agent)
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 2, capabilities: {}, info: { name: "v2", version: "0" } } }))
    expect((await agent.response(1)).result.protocolVersion).toBe(2)
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: project, mcpServers: [] } }))
    expect(typeof (await agent.response(2)).result.sessionId).toBe("string")
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "session/list", params: {} }))
    expect((await agent.response(3)).error.code).toBe(-32601)
    expect(existsSync(join(state, "dsh-acp"))).toBe(false)
    await agent.stop()
  })

  it("where no log can be written, a new session still opens, in memory only, and the log says why", async () => {
    const blocker = join(tempDir("dsh-state-"), "a-file")
    writeFileSync(blocker, "not a directory")
    const { agent, client } = await start(blocker)
    const sessionId = await client.newSession(tempDir("dsh-project-"))
    expect((await client.prompt(sessionId, "echo still works")).response.stopReason).toBe("end_turn")
    expect(agent.stderrLines.some((l) => l.includes(`session ${sessionId} is not persisted`))).toBe(true)
    expect((await client.agent.request(acp.methods.agent.session.list, {})).sessions).toEqual([])
    expect(protocolViolations(agent, client)).toEqual([])
  })

  it("--no-persist keeps everything in memory and advertises no loading", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const { agent, client } = await start(state, ["--no-persist"])
    expect(client.initializeResponse.agentCapabilities?.loadSession).toBe(false)
    expect(client.initializeResponse.agentCapabilities?.sessionCapabilities).toEqual({ close: {} })
    const sessionId = await client.newSession(project)
    await client.prompt(sessionId, "echo memory")
    expect(existsSync(join(state, "dsh-acp"))).toBe(false)
    expect((await errorOf(client.agent.request(acp.methods.agent.session.list, {}))).code).toBe(-32601)
    await agent.stop()
  })
})
