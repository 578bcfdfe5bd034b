/**
 * `dsh-acp --model …` end to end: the real command (`node dist/bin.js`) over stdio with the official
 * ACP SDK client, against a fake Chat Completions server and a fake Anthropic Messages server on
 * 127.0.0.1. A two-step task (the model runs a command, then answers from its output), a 401 that
 * reaches the user as a clear message while the session stays usable, and a cancel that aborts the
 * model's HTTP request. With DSH_ACP_TRANSCRIPT_DIR set, each wire transcript is written there.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { agentText, type AgentProcess, cardsOf, type Client, connectClient, protocolViolations, spawnAgent } from "../support/agentProcess.js"
import { type FakeProvider, type RecordedRequest, sse, startFakeProvider } from "../support/fakeProvider.js"

const KEY = "sk-e2e-fake-key-5555"
process.env["DSH_E2E_FAKE_KEY"] = KEY
// A key under a name the secret scrub does not know and in a shape it does not recognise: only
// the agent dropping its key variable keeps it from the model's commands.
const ODD_KEY = "plainvalue-7777-odd"
process.env["DSH_E2E_ODD_AUTH"] = ODD_KEY
process.env["DSH_E2E_PLAIN"] = "visible-1234"

// ---- what each fake "model" says, in its own wire format

interface Script {
  readonly toolCall: (id: string, command: string) => ReadonlyArray<string>
  readonly text: (text: string) => ReadonlyArray<string>
  /** Where the tool result is in a request body. */
  readonly toolResult: (request: RecordedRequest) => string | undefined
  readonly unauthorized: string
}

const chat = (choice: unknown, finish: string | null = null) =>
  sse({ id: "chatcmpl-e2e", object: "chat.completion.chunk", created: 1_700_000_000, model: "fake", choices: [{ index: 0, delta: choice, finish_reason: finish }] })

const chatScript: Script = {
  toolCall: (id, command) => {
    const args = JSON.stringify({ command, description: "Write and read a file" })
    return [
      chat({ role: "assistant", reasoning_content: "I should run it." }),
      chat({ content: "Running it." }),
      chat({ tool_calls: [{ index: 0, id, type: "function", function: { name: "Bash", arguments: args.slice(0, 10) } }] }),
      chat({ tool_calls: [{ index: 0, function: { arguments: args.slice(10) } }] }),
      chat({}, "tool_calls"),
      sse({ id: "chatcmpl-e2e", choices: [], usage: { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 } }),
      "data: [DONE]\n\n"
    ]
  },
  text: (text) => [chat({ content: text.slice(0, 5) }), chat({ content: text.slice(5) }), chat({}, "stop"), "data: [DONE]\n\n"],
  toolResult: (request) => request.body.messages.find((m: { role: string }) => m.role === "tool")?.content,
  unauthorized: JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } })
}

const ant = (data: { type: string } & Record<string, unknown>) => sse(data, data.type)
const antStart = ant({ type: "message_start", message: { id: "msg_e2e", type: "message", role: "assistant", model: "fake", content: [], usage: { input_tokens: 50, output_tokens: 1 } } })
const antStop = (reason: string) => [ant({ type: "message_delta", delta: { stop_reason: reason }, usage: { output_tokens: 20 } }), ant({ type: "message_stop" })]

const anthropicScript: Script = {
  toolCall: (id, command) => {
    const input = JSON.stringify({ command, description: "Write and read a file" })
    return [
      antStart,
      ant({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
      ant({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Running it." } }),
      ant({ type: "content_block_stop", index: 0 }),
      ant({ type: "content_block_start", index: 1, content_block: { type: "tool_use", id, name: "Bash", input: {} } }),
      ant({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: input.slice(0, 10) } }),
      ant({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: input.slice(10) } }),
      ant({ type: "content_block_stop", index: 1 }),
      ...antStop("tool_use")
    ]
  },
  text: (text) => [
    antStart,
    ant({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    ant({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }),
    ant({ type: "content_block_stop", index: 0 }),
    ...antStop("end_turn")
  ],
  toolResult: (request) => {
    for (const m of request.body.messages) {
      for (const block of Array.isArray(m.content) ? m.content : []) if (block.type === "tool_result") return block.content
    }
    return undefined
  },
  unauthorized: JSON.stringify({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } })
}

const providers = [
  {
    name: "openai-compatible (Chat Completions)",
    script: chatScript,
    args: (url: string) => ["--model", "openai-compatible:fake", "--base-url", `${url}/v1`, "--api-key-env", "DSH_E2E_FAKE_KEY", "--approve-all"],
    keyHint: "check DSH_E2E_FAKE_KEY"
  },
  {
    name: "anthropic (Messages)",
    script: anthropicScript,
    args: (url: string) => ["--model", "anthropic:fake", "--base-url", url, "--api-key-env", "DSH_E2E_FAKE_KEY", "--approve-all"],
    keyHint: "check DSH_E2E_FAKE_KEY"
  }
] as const

describe.each(providers)("dsh-acp --model $name", ({ args, keyHint, name, script }) => {
  let server: FakeProvider
  let agent: AgentProcess
  let client: Client
  let dir: string

  beforeAll(async () => {
    server = await startFakeProvider()
    dir = realpathSync(mkdtempSync(join(tmpdir(), "dsh-model-e2e-")))
    agent = spawnAgent(args(server.url))
    client = await connectClient(agent, { _meta: { terminal_output: true } })
  })

  afterAll(async () => {
    await agent?.stop()
    const transcripts = process.env["DSH_ACP_TRANSCRIPT_DIR"]
    if (transcripts && agent) {
      const lines = [
        ...agent.stdinLines.map((l) => `→ ${l}`),
        "",
        ...agent.stdoutLines.map((l) => `← ${l}`),
        "",
        ...server.requests.map((r) => `model request ${r.path}: ${JSON.stringify(r.body)}`)
      ]
      writeFileSync(join(transcripts, `${name.split(" ")[0]}.txt`), `${lines.join("\n")}\n`)
    }
    await server?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("a two-step task: the model runs a command on a live card, then answers from its output", async () => {
    const sessionId = await client.newSession(dir)
    server.reply(
      { chunks: script.toolCall("call_1", "echo hello > out.txt && cat out.txt") },
      (request) => ({ chunks: script.text(`The file says: ${script.toolResult(request)?.split("\n")[0]}`) })
    )
    const { response, updates } = await client.prompt(sessionId, "Write hello to out.txt and show it")
    expect(response.stopReason).toBe("end_turn")
    const cards = cardsOf(updates)
    expect(cards).toHaveLength(1)
    const card = cards[0]!
    expect(card.start.title).toContain("echo hello > out.txt")
    expect(card.final?.status).toBe("completed")
    expect(card.output).toBe("hello\n")
    expect(agentText(updates)).toBe("Running it.The file says: hello")
    // The second model request carried the command's result, status line included.
    expect(server.requests).toHaveLength(2)
    expect(script.toolResult(server.requests[1]!)).toMatch(/^hello\n/)
    expect(server.requests[0]!.body.tools.map((t: { name?: string; function?: { name: string } }) => t.name ?? t.function?.name)).toContain("Bash")
    expect(protocolViolations(agent, client)).toEqual([])
  })

  it("a 401 reaches the user as a clear message; the session stays usable; the key never shows", async () => {
    const sessionId = await client.newSession(dir)
    server.reply({ status: 401, body: script.unauthorized })
    const failed = await client.prompt(sessionId, "hi")
    expect(failed.response.stopReason).toBe("end_turn")
    const message = agentText(failed.updates)
    expect(message).toContain("401")
    expect(message).toContain(keyHint)
    server.reply({ chunks: script.text("Hello again") })
    const again = await client.prompt(sessionId, "hi again")
    expect(again.response.stopReason).toBe("end_turn")
    expect(agentText(again.updates)).toBe("Hello again")
    expect([...agent.stdoutLines, ...agent.stderrLines].some((l) => l.includes(KEY))).toBe(false)
  })

  it("session/cancel while the model streams aborts its HTTP request", async () => {
    const sessionId = await client.newSession(dir)
    // The reply without its ending: the model is still "talking" when the user cancels.
    server.reply({ chunks: script.text("Thinking very hard").slice(0, -2), hang: true })
    const prompt = client.prompt(sessionId, "think")
    await client.waitForUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === "agent_message_chunk")
    const aborts = server.clientAborts()
    await client.agent.notify("session/cancel", { sessionId })
    const { response } = await prompt
    expect(response.stopReason).toBe("cancelled")
    await server.nextAbort(4000)
    expect(server.clientAborts()).toBe(aborts + 1)
    expect(protocolViolations(agent, client)).toEqual([])
  })
})

describe("dsh-acp --model: the key never reaches a command", () => {
  it("`env` run by the model shows no trace of a key in an oddly named variable", async () => {
    const server = await startFakeProvider()
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "dsh-model-key-")))
    const agent = spawnAgent(["--model", "openai-compatible:fake", "--base-url", `${server.url}/v1`, "--api-key-env", "DSH_E2E_ODD_AUTH", "--approve-all"])
    try {
      const client = await connectClient(agent, { _meta: { terminal_output: true } })
      const sessionId = await client.newSession(dir)
      server.reply(
        { chunks: providers[0].script.toolCall("call_env", "env; echo PLANTED=$DSH_E2E_PLAIN") },
        () => ({ chunks: providers[0].script.text("done") })
      )
      const { updates } = await client.prompt(sessionId, "show the environment")
      const card = cardsOf(updates)[0]!
      expect(card.output).toContain("PATH=")
      // The agent still authenticated with it…
      expect(server.requests[0]!.headers["authorization"]).toBe(`Bearer ${ODD_KEY}`)
      // …but no command saw it, while an ordinary variable of the agent's environment is there.
      expect(card.output).not.toContain(ODD_KEY)
      expect(card.output).not.toContain("DSH_E2E_ODD_AUTH")
      expect(card.output).toContain("PLANTED=visible-1234")
    } finally {
      await agent.stop()
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("dsh-acp --model at start-up", () => {
  it("a bad --model stops the command with exit code 2 and a clear message", async () => {
    const agent = spawnAgent(["--model", "llama3"])
    const { code } = await agent.exited
    expect(code).toBe(2)
    expect(agent.stderrLines.join("\n")).toContain("--model must be <provider>:<model>")
    expect(agent.stdoutLines).toEqual([])
  })
})
