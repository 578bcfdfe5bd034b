/**
 * A model session that outlives the process: against a fake Chat Completions server, the model
 * runs a command (`cd` included), the agent is SIGKILLed, a new agent loads the session — the card
 * and the words come back — and the next model request carries the whole earlier history, while the
 * next command runs where the `cd` left the shell. The key is never written to the log.
 */
import * as acp from "@agentclientprotocol/sdk"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { agentText, type AgentProcess, connectClient, protocolViolations, spawnAgent } from "../support/agentProcess.js"
import { sse, startFakeProvider } from "../support/fakeProvider.js"
import { replayLikeZed } from "../support/zedReplay.js"

const KEY = "sk-persist-fake-key-8888"
process.env["DSH_E2E_PERSIST_KEY"] = KEY

const chat = (delta: unknown, finish: string | null = null) =>
  sse({ id: "chatcmpl-p", object: "chat.completion.chunk", created: 1_700_000_000, model: "fake", choices: [{ index: 0, delta, finish_reason: finish }] })
const toolCall = (id: string, command: string) => [
  chat({ role: "assistant", content: "On it." }),
  chat({ tool_calls: [{ index: 0, id, type: "function", function: { name: "Bash", arguments: JSON.stringify({ command, description: "Run it" }) } }] }),
  chat({}, "tool_calls"),
  "data: [DONE]\n\n"
]
const text = (value: string) => [chat({ content: value }), chat({}, "stop"), "data: [DONE]\n\n"]

const cleanup: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const f of cleanup.reverse()) await f()
})

describe("a persisted model session", () => {
  it("is loaded after a SIGKILL with its card, and the next request carries the earlier history", async () => {
    const server = await startFakeProvider()
    const state = realpathSync(mkdtempSync(join(tmpdir(), "dsh-model-state-")))
    const project = realpathSync(mkdtempSync(join(tmpdir(), "dsh-model-project-")))
    mkdirSync(join(project, "inner"))
    cleanup.push(() => server.close(), () => rmSync(state, { recursive: true, force: true }), () => rmSync(project, { recursive: true, force: true }))
    const args = ["--model", "openai-compatible:fake", "--base-url", `${server.url}/v1`, "--api-key-env", "DSH_E2E_PERSIST_KEY", "--approve-all"]
    const agents: Array<AgentProcess> = []
    cleanup.push(() => Promise.all(agents.map((a) => a.stop())).then(() => {}))
    const spawn = () => {
      const agent = spawnAgent(args, { XDG_STATE_HOME: state })
      agents.push(agent)
      return agent
    }

    const first = spawn()
    const c1 = await connectClient(first, { _meta: { terminal_output: true } })
    const sessionId = await c1.newSession(project)
    server.reply({ chunks: toolCall("call_a", "cd inner && echo marker-one") }, { chunks: text("Done: marker-one.") })
    const turn = await c1.prompt(sessionId, "Go to inner and echo marker-one")
    expect(turn.response.stopReason).toBe("end_turn")
    expect(server.requests).toHaveLength(2)
    first.signal("SIGKILL")
    await first.exited
    const original = replayLikeZed(c1.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate !== "session_info_update"))

    const second = spawn()
    const c2 = await connectClient(second, { _meta: { terminal_output: true } })
    const listed = await c2.agent.request(acp.methods.agent.session.list, {})
    expect(listed.sessions.map((s) => [s.sessionId, s.title])).toEqual([[sessionId, "Go to inner and echo marker-one"]])
    await c2.agent.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] })
    const replayed = replayLikeZed(c2.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate !== "available_commands_update"))
    expect(replayed.problems).toEqual([])
    expect(replayed.messages.filter((m) => m.kind !== "user_message_chunk")).toEqual(original.messages)
    expect([...replayed.cards.values()].map((c) => [c.title, c.status, c.terminal?.output, c.terminal?.exit])).toEqual(
      [...original.cards.values()].map((c) => [c.title, c.status, c.terminal?.output, c.terminal?.exit])
    )

    // The next turn: the model sees everything said and run before the restart.
    server.reply({ chunks: toolCall("call_a", "pwd") }, { chunks: text("Still here.") })
    const next = await c2.prompt(sessionId, "Where are you?")
    expect(next.response.stopReason).toBe("end_turn")
    expect(agentText(next.updates)).toBe("On it.Still here.")
    const request = server.requests[2]!.body
    const said = JSON.stringify(request.messages)
    expect(said).toContain("Go to inner and echo marker-one")
    expect(said).toContain("Done: marker-one.")
    expect(request.messages.filter((m: { role: string }) => m.role === "tool")[0].content).toContain("marker-one")
    expect(request.messages.at(-1)).toMatchObject({ role: "user" })
    // The shell is where the `cd` left it; the model's reused call id got a new card id.
    const cards = replayLikeZed(c2.updates.filter((n) => n.sessionId === sessionId))
    expect(cards.problems).toEqual([])
    expect([...cards.cards.values()].at(-1)!.terminal!.output).toBe(`${project}/inner\n`)
    expect(protocolViolations(second, c2)).toEqual([])

    const logs = readdirSync(join(state, "dsh-acp", "sessions")).map((f) => readFileSync(join(state, "dsh-acp", "sessions", f), "utf8"))
    expect(logs.join("")).toContain("marker-one")
    expect(logs.some((l) => l.includes(KEY))).toBe(false)
  }, 60_000)
})
