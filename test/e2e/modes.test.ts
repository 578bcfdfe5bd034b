/**
 * Session modes over real stdio: the `session/new` response offers them (SessionModeState and a
 * `mode` config option), `session/set_config_option` and `session/set_mode` switch them with both
 * updates following, bad input gets -32602 / -32002 with the mode unchanged, and the next command
 * (a `/bg` task too) runs under the new mode's sandbox on real bwrap. Every line is checked against
 * the official v1 schema.
 */
import * as acp from "@agentclientprotocol/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "../../src/Cli.js"
import { type AgentProcess, cardsOf, type Client, connectClient, type Json, protocolViolations, spawnAgent } from "../support/agentProcess.js"
import { sandboxProblem } from "../bash/helpers.js"

const ZED = { _meta: { terminal_output: true, "terminal-auth": true } }

/** The whole output a card showed (its live chunks). */
const cardOutput = (updates: ReadonlyArray<Json>): string =>
  updates.flatMap((u) => u._meta?.terminal_output?.data ?? []).join("")

describe.skipIf(sandboxProblem !== undefined)(`modes on the wire${sandboxProblem === undefined ? "" : ` (skipped: ${sandboxProblem})`}`, () => {
  let agent: AgentProcess
  let client: Client
  let project: string
  let outside: string
  let nextId = 9000

  /** A raw request (bypassing the SDK's own checks), answered with the whole response object. */
  const raw = async (method: string, params: unknown): Promise<Json> => {
    const id = ++nextId
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id, method, params }))
    return agent.response(id)
  }

  beforeAll(async () => {
    project = fs.realpathSync(fs.mkdtempSync(join(tmpdir(), "dsh-acp-e2e-modes-")))
    outside = fs.realpathSync(fs.mkdtempSync(join(fs.existsSync("/var/tmp") ? "/var/tmp" : process.cwd(), "dsh-acp-e2e-modes-")))
    agent = spawnAgent()
    client = await connectClient(agent, ZED)
  })

  afterAll(async () => {
    await agent?.stop()
    fs.rmSync(project, { recursive: true, force: true })
    fs.rmSync(outside, { recursive: true, force: true })
  })

  it("session/new offers the modes both ways, starting in full", async () => {
    const response: Json = await client.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] })
    expect(response.modes).toEqual({
      currentModeId: "full",
      availableModes: [
        { id: "full", name: "Full access", description: expect.any(String) },
        { id: "workspace", name: "Workspace", description: expect.any(String) },
        { id: "read-only", name: "Read-only", description: expect.any(String) }
      ]
    })
    expect(response.configOptions).toHaveLength(1)
    expect(response.configOptions[0]).toMatchObject({ id: "mode", category: "mode", type: "select", currentValue: "full" })
    expect(response.configOptions[0].options.map((o: Json) => o.value)).toEqual(["full", "workspace", "read-only"])
  })

  it("switching applies to the next command, a /bg task included; bad values change nothing", async () => {
    const sessionId = await client.newSession(project)
    const write = async (name: string) => {
      const { updates } = await client.prompt(sessionId, `echo x > ${outside}/${name}`)
      const [card] = cardsOf(updates)
      return { status: card!.final.status, output: cardOutput(card!.updates) }
    }
    expect((await write("a")).status).toBe("completed")

    const set: Json = await client.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "read-only" })
    expect(set.configOptions[0].currentValue).toBe("read-only")
    await client.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === "config_option_update")
    await client.waitForUpdate((n) =>
      n.sessionId === sessionId && n.update.sessionUpdate === "current_mode_update" && n.update.currentModeId === "read-only")
    const denied = await write("b")
    expect(denied.status).toBe("failed")
    expect(denied.output).toContain("Read-only file system")
    expect(fs.existsSync(join(outside, "b"))).toBe(false)

    expect(await client.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "workspace" })).toEqual({})
    await client.waitForUpdate((n) =>
      n.sessionId === sessionId && n.update.sessionUpdate === "current_mode_update" && n.update.currentModeId === "workspace")
    await client.waitForUpdate((n) =>
      n.sessionId === sessionId && n.update.sessionUpdate === "config_option_update" &&
      (n.update as Json).configOptions[0].currentValue === "workspace")
    const updatesBefore = client.updates.length

    // Unknown values, options, sessions: errors, and the mode stays `workspace`.
    expect((await raw("session/set_config_option", { sessionId, configId: "mode", value: "yolo" })).error.code).toBe(-32602)
    expect((await raw("session/set_config_option", { sessionId, configId: "model", value: "x" })).error.code).toBe(-32602)
    expect((await raw("session/set_config_option", { sessionId, configId: "mode", type: "boolean", value: true })).error.code).toBe(-32602)
    expect((await raw("session/set_mode", { sessionId, modeId: "ask" })).error.code).toBe(-32602)
    expect((await raw("session/set_mode", { sessionId })).error.code).toBe(-32602)
    expect((await raw("session/set_mode", { sessionId: "nope", modeId: "full" })).error.code).toBe(-32002)
    expect((await raw("session/set_config_option", { sessionId: "nope", configId: "mode", value: "full" })).error.code).toBe(-32002)
    expect(client.updates.slice(updatesBefore).filter((n) => n.sessionId === sessionId)).toEqual([])

    const inside = await client.prompt(sessionId, "echo x > inside && cat inside")
    expect(cardsOf(inside.updates)[0]!.final.status).toBe("completed")
    expect(fs.readFileSync(join(project, "inside"), "utf8")).toBe("x\n")
    const outsideWrite = await write("c")
    expect(outsideWrite.output).toContain("Read-only file system")

    // A background task runs under the session's mode too.
    await client.prompt(sessionId, `/bg echo x > ${outside}/bg`)
    const end = await client.waitForUpdate((n) =>
      n.sessionId === sessionId && n.update.sessionUpdate === "tool_call_update" && (n.update as Json)._meta?.terminal_exit !== undefined &&
      client.updates.some((s) => s.update.sessionUpdate === "tool_call" && (s.update as Json).toolCallId === (n.update as Json).toolCallId && (s.update as Json).title === `echo x > ${outside}/bg`))
    const bgCard = cardsOf(client.updates.filter((n) => n.sessionId === sessionId).map((n) => n.update))
      .find((c) => c.toolCallId === (end.update as Json).toolCallId)!
    expect(cardOutput(bgCard.updates), JSON.stringify(bgCard)).toContain("Read-only file system")
    expect(fs.existsSync(join(outside, "bg"))).toBe(false)

    await client.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "full" })
    expect((await write("d")).status).toBe("completed")
    expect(fs.readdirSync(outside).sort()).toEqual(["a", "d"])
  })

  it("every line the agent wrote is valid ACP v1", () => {
    expect(protocolViolations(agent, client)).toEqual([])
  })
})

describe("modes without a sandbox", () => {
  it("process groups: only the full mode, the reason in the option and in a notice for clients that show them", async () => {
    const saved = process.env.DSH_ACP_CONTAINMENT
    process.env.DSH_ACP_CONTAINMENT = "process-group"
    let agent: AgentProcess
    try {
      agent = spawnAgent(["--sandbox", "workspace"])
    } finally {
      if (saved === undefined) delete process.env.DSH_ACP_CONTAINMENT
      else process.env.DSH_ACP_CONTAINMENT = saved
    }
    try {
      const client = await connectClient(agent, { ...ZED, session: { notices: {} } } as acp.ClientCapabilities)
      const response: Json = await client.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] })
      expect(response.modes.currentModeId).toBe("full")
      expect(response.modes.availableModes.map((m: Json) => m.id)).toEqual(["full"])
      expect(response.configOptions[0].description).toContain("Sandboxed modes are not offered")
      const notice: Json = await client.waitForUpdate((n) => n.update.sessionUpdate === "notice")
      expect(notice.update).toMatchObject({ severity: "warning", title: "Sandboxed modes are not available" })
      // Then the commands, as for every session (so the count of updates below is complete).
      await client.waitForUpdate((n) => n.update.sessionUpdate === "available_commands_update")
      expect(agent.stderrLines.join("\n")).toContain("the workspace profile is not available")
      const refused = await (async () => {
        agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id: 77, method: "session/set_mode", params: { sessionId: response.sessionId, modeId: "workspace" } }))
        return agent.response(77)
      })()
      expect(refused.error.code).toBe(-32602)
      expect(protocolViolations(agent, client)).toEqual([])
    } finally {
      await agent.stop()
    }
  })
})

describe("--sandbox and --allow-network", () => {
  it("parse from flags and the environment; a bad value is refused", () => {
    const options = (argv: Array<string>, env: Record<string, string> = {}) => {
      const parsed = parseArgs(argv, env)
      if (parsed._tag === "Left" || parsed.right._tag !== "Agent") throw new Error(String(parsed))
      return parsed.right.options
    }
    expect(options([])).toMatchObject({ sandbox: undefined, allowNetwork: false })
    expect(options(["--sandbox", "workspace", "--allow-network"])).toMatchObject({ sandbox: "workspace", allowNetwork: true })
    expect(options([], { DSH_ACP_SANDBOX: "read-only", DSH_ACP_ALLOW_NETWORK: "1" })).toMatchObject({ sandbox: "read-only", allowNetwork: true })
    expect(options(["--sandbox=full"], { DSH_ACP_SANDBOX: "read-only" })).toMatchObject({ sandbox: "full" })
    expect(parseArgs(["--sandbox", "none"], {})._tag).toBe("Left")
    expect(parseArgs([], { DSH_ACP_SANDBOX: "strict" })._tag).toBe("Left")
  })
})
