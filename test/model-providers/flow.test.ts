/**
 * Issue #11, model side, end to end over the real command (`node dist/bin.js`) and a fake Chat
 * Completions server on 127.0.0.1:
 * - a model request that goes silent mid-stream is abandoned after the idle timeout: the turn ends
 *   with a provider error message, the HTTP request is aborted, and the next prompt works;
 * - the Bash tool's description states the executor's figures (`--timeout-ms`), not constants.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { agentText, type AgentProcess, connectClient, protocolViolations, spawnAgent } from "../support/agentProcess.js"
import { type FakeProvider, type RecordedRequest, sse, startFakeProvider } from "../support/fakeProvider.js"

const chat = (delta: unknown, finish: string | null = null) =>
  sse({ id: "chatcmpl-flow", object: "chat.completion.chunk", created: 1_700_000_000, model: "fake", choices: [{ index: 0, delta, finish_reason: finish }] })
const text = (words: string) => [chat({ role: "assistant", content: words }), chat({}, "stop"), "data: [DONE]\n\n"]

const bashDescription = (request: RecordedRequest): string =>
  request.body.tools.find((t: { function: { name: string } }) => t.function.name === "Bash").function.description

describe("dsh-acp --model: flow of a model request", () => {
  let server: FakeProvider
  let dir: string
  const agents: Array<AgentProcess> = []
  const start = (args: ReadonlyArray<string>) => {
    const agent = spawnAgent(["--model", "openai-compatible:fake", "--base-url", `${server.url}/v1`, "--approve-all", ...args])
    agents.push(agent)
    return agent
  }

  beforeAll(async () => {
    server = await startFakeProvider()
    dir = realpathSync(mkdtempSync(join(tmpdir(), "dsh-model-flow-")))
  })

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()))
    await server?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("a provider that stops sending mid-stream: the turn ends with an idle-timeout message, the request is aborted, the session goes on", async () => {
    // Short, so the test is quick; what is checked is the outcome, not how long it took.
    const agent = start(["--model-idle-timeout-ms", "1500"])
    const client = await connectClient(agent, { _meta: { terminal_output: true } })
    const sessionId = await client.newSession(dir)
    // The first words, then silence with the connection open.
    server.reply({ chunks: [chat({ role: "assistant", content: "Let me think" })], hang: true })
    const aborts = server.clientAborts()
    const stalled = await client.prompt(sessionId, "think hard")
    expect(stalled.response.stopReason).toBe("end_turn")
    const message = agentText(stalled.updates)
    expect(message).toContain("Let me think")
    expect(message).toContain("no data from")
    expect(message).toContain("1.5 s in the middle of its response")
    expect(message).toContain("--model-idle-timeout-ms")
    await server.nextAbort(10_000)
    expect(server.clientAborts()).toBeGreaterThan(aborts)

    server.reply({ chunks: text("Back again") })
    const again = await client.prompt(sessionId, "hello?")
    expect(again.response.stopReason).toBe("end_turn")
    expect(agentText(again.updates)).toBe("Back again")
    // The history kept what was said before the silence.
    const last = server.requests.at(-1)!.body.messages
    expect(JSON.stringify(last)).toContain("Let me think")
    expect(protocolViolations(agent, client)).toEqual([])
  })

  it("the Bash tool's description states --timeout-ms, not a constant", async () => {
    const agent = start(["--timeout-ms", "5000"])
    const client = await connectClient(agent, { _meta: { terminal_output: true } })
    const sessionId = await client.newSession(dir)
    const before = server.requests.length
    server.reply({ chunks: text("ok") })
    await client.prompt(sessionId, "hi")
    const description = bashDescription(server.requests[before]!)
    expect(description).toContain("timeout_ms defaults to 5000 (5 s) and is at most 600000 (600 s)")
    expect(description).toContain("[timed out after 5s]")
    expect(description).not.toContain("120000")
    expect(description).toContain("about 30000 characters")
    expect(description).toContain("then SIGKILL 2 s later")
  })

  it("--model-idle-timeout-ms takes a whole number of milliseconds", async () => {
    const agent = spawnAgent(["--model", "openai-compatible:fake", "--base-url", `${server.url}/v1`, "--model-idle-timeout-ms", "1e3"])
    const { code } = await agent.exited
    expect(code).toBe(2)
    expect(agent.stderrLines.join("\n")).toContain("--model-idle-timeout-ms needs a whole number of milliseconds")
  })
})
