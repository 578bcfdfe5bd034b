/**
 * Sessions that outlive the process, end to end over stdio with the official SDK client: three
 * prompts (a failing command after a `cd`, a long output, a `/bg` task), the agent SIGKILLed, a new
 * agent lists the session, loads it — the replay validates against the v1 schema and Zed's replay
 * of it shows the same cards as the original run — and the next prompt runs where the `cd` left it.
 * In both forms: terminal cards (Zed) and the ```console text fallback.
 */
import * as acp from "@agentclientprotocol/sdk"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentProcess, connectClient, eventually, groupGone, groupOf, protocolViolations, spawnAgent, uniqueSleep } from "../support/agentProcess.js"
import { replayLikeZed } from "../support/zedReplay.js"

const dirs: Array<string> = []
const tempDir = (prefix: string) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const forms = [
  { form: "card", capabilities: { _meta: { terminal_output: true, "terminal-auth": true } } },
  { form: "fallback", capabilities: {} }
] as const

const agents: Array<AgentProcess> = []
afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()))
})
const spawn = (state: string) => {
  const agent = spawnAgent([], { XDG_STATE_HOME: state })
  agents.push(agent)
  return agent
}

/** What the user sees of a card, whatever the form: title, status, terminal output and exit, or the text shown. */
const seen = (card: ReturnType<typeof replayLikeZed>["cards"] extends Map<string, infer C> ? C : never) => ({
  title: card.title,
  status: card.status,
  output: card.terminal?.output,
  exit: card.terminal?.exit,
  content: card.content
})

describe.each(forms)("persisted sessions ($form)", ({ form, capabilities }) => {
  it("survive a SIGKILL: listed, loaded with every card replayed, and continued in the same cwd", async () => {
    const state = tempDir("dsh-state-")
    const project = tempDir("dsh-project-")
    const sleep = uniqueSleep(form === "card" ? 1 : 2)

    const first = spawn(state)
    const c1 = await connectClient(first, capabilities)
    const sessionId = await c1.newSession(project)
    const failing = await c1.prompt(sessionId, "mkdir -p sub && cd sub && echo oops >&2; false")
    expect(failing.response.stopReason).toBe("end_turn")
    await c1.prompt(sessionId, "seq 1 30000")
    await c1.prompt(sessionId, `/bg echo task-started; ${sleep}`)
    const taskGroup = await groupOf(sleep)
    // The task's first output reaches the log (held back at most a second) before the kill.
    const log = join(state, "dsh-acp", "sessions", `${sessionId}.jsonl`)
    await eventually("the task output in the log", () => (readFileSync(log, "utf8").includes(`"data":"task-started`) ? true : undefined))
    expect(protocolViolations(first, c1)).toEqual([])
    first.signal("SIGKILL")
    await first.exited
    // Not the agent's to clean up any more (it was killed): the test ends the orphaned task.
    try {
      process.kill(-taskGroup, "SIGKILL")
    } catch {
      // already gone
    }
    await groupGone(taskGroup)

    const original = replayLikeZed(c1.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate !== "session_info_update"))
    expect(original.problems).toEqual([])

    const second = spawn(state)
    const c2 = await connectClient(second, capabilities)
    expect(c2.initializeResponse.agentCapabilities?.loadSession).toBe(true)
    expect(c2.initializeResponse.agentCapabilities?.sessionCapabilities).toMatchObject({ list: {}, resume: {}, close: {}, delete: {} })
    const listed = await c2.agent.request(acp.methods.agent.session.list, { cwd: project })
    expect(listed.sessions).toEqual([
      expect.objectContaining({ sessionId, cwd: project, title: "mkdir -p sub && cd sub && echo oops >&2; false" })
    ])
    const elsewhere = await c2.agent.request(acp.methods.agent.session.list, { cwd: state })
    expect(elsewhere.sessions).toEqual([])

    await c2.agent.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] })
    // Sent right after the response: the client knows the session's commands again.
    await c2.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === "available_commands_update")
    const replayed = replayLikeZed(c2.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate !== "available_commands_update"))
    expect(replayed.problems).toEqual([])
    expect(protocolViolations(second, c2)).toEqual([])

    // The user's prompts come back, then the same agent text and the same cards.
    expect(replayed.messages.filter((m) => m.kind === "user_message_chunk").map((m) => m.text)).toEqual([
      "mkdir -p sub && cd sub && echo oops >&2; false",
      "seq 1 30000",
      `/bg echo task-started; ${sleep}`
    ])
    expect(replayed.messages.filter((m) => m.kind !== "user_message_chunk")).toEqual(original.messages)
    const before = [...original.cards.values()]
    const after = [...replayed.cards.values()]
    expect(after.map((c) => c.toolCallId)).toEqual(before.map((c) => c.toolCallId))
    expect(after.slice(0, 2).map(seen)).toEqual(before.slice(0, 2).map(seen))
    expect(before[0]!.status).toBe("failed")
    if (form === "card") {
      expect(after[0]!.terminal).toMatchObject({ cwd: project, exit: { exit_code: 1, signal: null } })
      expect(after[1]!.terminal!.output).toContain("\n29999\n30000\n")
    }
    // The task card was open when the agent died: what it showed, then a note, and its end.
    const task = after[2]!
    expect(before[2]!.status).toBe("in_progress")
    expect(task.status).toBe("failed")
    const taskText = form === "card" ? task.terminal!.output : JSON.stringify(task.content)
    expect(taskText).toContain("task-started")
    expect(taskText).toContain("stopped when the agent exited")
    if (form === "card") expect(task.terminal!.exit).toEqual({ exit_code: null, signal: "SIGKILL" })

    // The session goes on where it was: the `cd` persisted, and a new card takes a new id.
    const next = await c2.prompt(sessionId, "pwd")
    const all = replayLikeZed(c2.updates.filter((n) => n.sessionId === sessionId))
    expect(all.problems).toEqual([])
    const pwdCard = [...all.cards.values()].at(-1)!
    expect(before.map((c) => c.toolCallId)).not.toContain(pwdCard.toolCallId)
    expect(form === "card" ? pwdCard.terminal!.output : JSON.stringify(pwdCard.content)).toContain(`${project}/sub`)
    expect(next.response.stopReason).toBe("end_turn")
    expect(protocolViolations(second, c2)).toEqual([])
    await second.stop()
  }, 60_000)
})
