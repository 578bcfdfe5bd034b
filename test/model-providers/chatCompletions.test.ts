import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ChatCompletions from "../../src/Model/ChatCompletions.js"
import * as InvalidToolCall from "../../src/Model/InvalidToolCall.js"
import * as ProviderError from "../../src/Model/ProviderError.js"
import { type FakeProvider, sse, startFakeProvider, withServer } from "../support/fakeProvider.js"
import { simple } from "../support/responseParts.js"

const Bash = Tool.make("bash", {
  description: "Run a bash command",
  parameters: { command: Schema.String, timeout_ms: Schema.optional(Schema.Number) },
  success: Schema.String
})
const tools = Toolkit.make(Bash)
const handlers = tools.toLayer({ bash: () => Effect.succeed("") })

const KEY = "sk-test-secret-0123456789"

const layer = (server: FakeProvider, apiKey: string | null = KEY) =>
  ChatCompletions.layer({
    baseUrl: `${server.url}/v1/`,
    model: "test-model",
    apiKey: apiKey === null ? undefined : Redacted.make(apiKey),
    apiKeyEnv: "OPENAI_API_KEY"
  }).pipe(Layer.provide(FetchHttpClient.layer))

const stream = (server: FakeProvider, prompt: Prompt.RawInput = "list files") =>
  LanguageModel.streamText({ prompt, toolkit: tools, disableToolCallResolution: true }).pipe(
    Stream.provideLayer(Layer.merge(layer(server), handlers))
  )

const run = (server: FakeProvider, prompt?: Prompt.RawInput) =>
  stream(server, prompt).pipe(Stream.runCollect, Effect.map((c) => Array.from(c) as Array<Json>))

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const base = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1_700_000_000, model: "test-model" }
const delta = (d: unknown, finish: string | null = null) => sse({ ...base, choices: [{ index: 0, delta: d, finish_reason: finish }] })

const errorText = (e: unknown) => ProviderError.describe(e as never)

describe("Chat Completions provider", () => {
  it.live("OpenAI style: text, a tool call split across deltas, a usage-only chunk, [DONE]", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({
          chunks: [
            delta({ role: "assistant", content: "" }),
            delta({ content: "Let me " }),
            delta({ content: "look." }),
            delta({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "bash", arguments: "" } }] }),
            delta({ tool_calls: [{ index: 0, function: { arguments: "{\"comm" } }] }),
            delta({ tool_calls: [{ index: 0, function: { arguments: "and\":\"ls -la\"}" } }] }),
            delta({}, "tool_calls"),
            sse({ ...base, choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19, completion_tokens_details: { reasoning_tokens: 0 } } }),
            "data: [DONE]\n\n"
          ]
        })
        const parts = yield* run(server)
        expect(simple(parts)).toEqual([
          "text-start",
          "text-delta:Let me ",
          "text-delta:look.",
          "text-end",
          "tool-params-start:call_a:bash",
          "tool-params-delta:{\"comm",
          "tool-params-delta:and\":\"ls -la\"}",
          "tool-params-end",
          "tool-call:call_a:bash:{\"command\":\"ls -la\"}",
          "finish:tool-calls"
        ])
        const finish = parts.find((p) => p.type === "finish") as { usage: { inputTokens: number; outputTokens: number; totalTokens: number } }
        expect([finish.usage.inputTokens, finish.usage.outputTokens, finish.usage.totalTokens]).toEqual([12, 7, 19])
        const metadata = parts.find((p) => p.type === "response-metadata") as { modelId: { _tag: string; value: string } }
        expect(metadata.modelId).toMatchObject({ _tag: "Some", value: "test-model" })

        const request = server.requests[0]!
        expect(request.path).toBe("/v1/chat/completions")
        expect(request.headers.authorization).toBe(`Bearer ${KEY}`)
        expect(request.body).toMatchObject({ model: "test-model", stream: true, stream_options: { include_usage: true }, tool_choice: "auto" })
        expect(request.body.messages).toEqual([{ role: "user", content: "list files" }])
        expect(request.body.tools).toHaveLength(1)
        expect(request.body.tools[0]).toMatchObject({
          type: "function",
          function: { name: "bash", description: "Run a bash command", parameters: { type: "object", required: ["command"], properties: { command: { type: "string" } } } }
        })
      })
    ))

  it.live("llama.cpp style: reasoning_content then content, CRLF framing, comments, usage on the finish chunk", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const crlf = (s: string) => s.replaceAll("\n", "\r\n")
        server.reply({
          chunks: [
            ": ping\r\n\r\n",
            crlf(delta({ reasoning_content: "The user wants " })),
            crlf(delta({ reasoning_content: "a greeting." })),
            crlf(delta({ content: "Hi" })),
            crlf(delta({ content: "!" })),
            crlf(sse({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }, timings: {} })),
            "data: [DONE]\r\n\r\n"
          ],
          delayMs: 2
        })
        const parts = yield* run(server, "say hi")
        expect(simple(parts)).toEqual([
          "reasoning-start",
          "reasoning-delta:The user wants ",
          "reasoning-delta:a greeting.",
          "reasoning-end",
          "text-start",
          "text-delta:Hi",
          "text-delta:!",
          "text-end",
          "finish:stop"
        ])
        expect((parts.at(-1) as { usage: { totalTokens: number } }).usage.totalTokens).toBe(7)
      })
    ))

  it.live("Ollama style: `reasoning`, a whole tool call in one delta, finish \"stop\", multi-line data, no key", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const call = { ...base, choices: [{ index: 0, delta: { tool_calls: [{ id: "call_x", index: 0, type: "function", function: { name: "bash", arguments: "{\"command\":\"pwd\"}" } }] }, finish_reason: null }] }
        server.reply({
          chunks: [
            delta({ role: "assistant", reasoning: "Need the cwd." }),
            // One JSON value over two data lines: the lines join with "\n", which JSON allows.
            `data: ${JSON.stringify(call).replace(",\"choices\"", "\ndata: ,\"choices\"")}\n\n`,
            delta({ content: "" }, "stop"),
            "data: [DONE]\n\n"
          ]
        })
        const parts = yield* LanguageModel.streamText({ prompt: "where am I", toolkit: tools, disableToolCallResolution: true }).pipe(
          Stream.runCollect,
          Effect.provide(layer(server, null)),
          Effect.provide(handlers),
          Effect.provide(FetchHttpClient.layer)
        )
        expect(simple(Array.from(parts) as never)).toEqual([
          "reasoning-start",
          "reasoning-delta:Need the cwd.",
          "reasoning-end",
          "tool-params-start:call_x:bash",
          "tool-params-delta:{\"command\":\"pwd\"}",
          "tool-params-end",
          "tool-call:call_x:bash:{\"command\":\"pwd\"}",
          "finish:tool-calls"
        ])
        expect(server.requests[0]!.headers.authorization).toBeUndefined()
      })
    ))

  it.live("parallel tool calls interleaved by index; a server reusing index 0 with new ids", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply(
          {
            chunks: [
              delta({ tool_calls: [{ index: 0, id: "c1", function: { name: "bash", arguments: "{\"command\":" } }] }),
              delta({ tool_calls: [{ index: 1, id: "c2", function: { name: "bash", arguments: "{\"command\":" } }] }),
              delta({ tool_calls: [{ index: 1, function: { arguments: "\"b\"}" } }] }),
              delta({ tool_calls: [{ index: 0, function: { arguments: "\"a\"}" } }] }),
              delta({}, "tool_calls"),
              "data: [DONE]\n\n"
            ]
          },
          {
            chunks: [
              delta({ tool_calls: [{ index: 0, id: "d1", function: { name: "bash", arguments: "{\"command\":\"x\"}" } }] }),
              delta({ tool_calls: [{ index: 0, id: "d2", function: { name: "bash", arguments: "{\"command\":\"y\"}" } }] }),
              delta({}, "tool_calls"),
              "data: [DONE]\n\n"
            ]
          }
        )
        const calls = (parts: ReadonlyArray<Record<string, unknown>>) => simple(parts).filter((p) => p.startsWith("tool-call"))
        expect(calls(yield* run(server))).toEqual(["tool-call:c1:bash:{\"command\":\"a\"}", "tool-call:c2:bash:{\"command\":\"b\"}"])
        expect(calls(yield* run(server))).toEqual(["tool-call:d1:bash:{\"command\":\"x\"}", "tool-call:d2:bash:{\"command\":\"y\"}"])
      })
    ))

  it.live("an unknown tool, arguments that are not JSON and arguments the Schema rejects do not fail the stream", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({
          chunks: [
            delta({ tool_calls: [{ index: 0, id: "u1", function: { name: "python", arguments: "{\"code\":\"1\"}" } }] }),
            delta({ tool_calls: [{ index: 1, id: "u2", function: { name: "bash", arguments: "{\"command\": ls" } }] }),
            delta({ tool_calls: [{ index: 2, id: "u3", function: { name: "bash", arguments: "{\"cmd\":\"ls\"}" } }] }),
            delta({ tool_calls: [{ index: 3, id: "u4", function: { name: "bash", arguments: "{\"command\":\"ls\"}" } }] }),
            delta({}, "tool_calls"),
            "data: [DONE]\n\n"
          ]
        })
        const parts = yield* run(server)
        const invalid = parts.flatMap((p) => {
          const call = InvalidToolCall.fromPart(p)
          return call ? [call] : []
        })
        expect(invalid.map((c) => [c.id, c.name, c.reason, c.arguments])).toEqual([
          ["u1", "python", "unknown-tool", "{\"code\":\"1\"}"],
          ["u2", "bash", "invalid-json", "{\"command\": ls"],
          ["u3", "bash", "invalid-params", "{\"cmd\":\"ls\"}"]
        ])
        expect(invalid[0]!.message).toContain("Available tools: bash")
        expect(invalid[2]!.message).toContain("command")
        // The unknown tool got no early card; the valid call still comes through.
        expect(simple(parts).filter((p) => p.startsWith("tool-params-start"))).toEqual([
          "tool-params-start:u2:bash",
          "tool-params-start:u3:bash",
          "tool-params-start:u4:bash"
        ])
        expect(simple(parts)).toContain("tool-call:u4:bash:{\"command\":\"ls\"}")
        expect(simple(parts).at(-1)).toBe("finish:tool-calls")
      })
    ))

  it.live("encodes history: system, assistant tool calls (also an invalid one), tool results as text", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({ chunks: [delta({ content: "ok" }, "stop"), "data: [DONE]\n\n"] })
        const bad = InvalidToolCall.toPromptParts(
          InvalidToolCall.make({ id: "b1", name: "bash", arguments: "{oops", reason: "invalid-json", message: "not JSON" })
        )
        const prompt = Prompt.fromMessages([
          Prompt.makeMessage("system", { content: "You are terse." }),
          Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: "run ls" })] }),
          Prompt.makeMessage("assistant", {
            content: [
              Prompt.makePart("reasoning", { text: "hidden" }),
              Prompt.makePart("text", { text: "Running." }),
              Prompt.makePart("tool-call", { id: "c1", name: "bash", params: { command: "ls" }, providerExecuted: false }),
              bad.toolCall
            ]
          }),
          Prompt.makeMessage("tool", {
            content: [
              Prompt.makePart("tool-result", { id: "c1", name: "bash", isFailure: false, result: "a\nb\n\n[exit 0]", providerExecuted: false }),
              bad.toolResult
            ]
          })
        ])
        yield* run(server, prompt)
        expect(server.requests[0]!.body.messages).toEqual([
          { role: "system", content: "You are terse." },
          { role: "user", content: "run ls" },
          {
            role: "assistant",
            content: "Running.",
            tool_calls: [
              { id: "c1", type: "function", function: { name: "bash", arguments: "{\"command\":\"ls\"}" } },
              { id: "b1", type: "function", function: { name: "bash", arguments: "{\"invalid_arguments\":\"{oops\"}" } }
            ]
          },
          { role: "tool", tool_call_id: "c1", content: "a\nb\n\n[exit 0]" },
          { role: "tool", tool_call_id: "b1", content: "not JSON" }
        ])
      })
    ))

  it.live("HTTP errors carry the status, a hint and the server's message, never the key", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const body = (message: string) => JSON.stringify({ error: { message, type: "invalid_request_error" } })
        server.reply(
          { status: 401, body: body(`Incorrect API key provided: ${KEY.slice(0, 5)}***`) },
          { status: 404, body: body("The model `test-model` does not exist") },
          { status: 429, body: body("Rate limit reached") },
          { status: 500, body: "<html>upstream exploded</html>", headers: { "content-type": "text/html" } },
          { status: 404, body: JSON.stringify({ error: "model 'test-model' not found" }) } // Ollama's shape
        )
        const failures: Array<string> = []
        for (let i = 0; i < 5; i++) {
          const error = yield* Effect.flip(run(server))
          expect(error._tag).toBe("HttpResponseError")
          failures.push(errorText(error))
          expect(JSON.stringify(error)).not.toContain(KEY)
          expect(String(error)).not.toContain(KEY)
        }
        expect(failures[0]).toMatch(/^ChatCompletions: HTTP 401: the API key was rejected \(check OPENAI_API_KEY\) — Incorrect API key/)
        expect(failures[1]).toContain("HTTP 404: unknown model \"test-model\" or wrong base URL")
        expect(failures[1]).toContain("/v1/chat/completions")
        expect(failures[1]).toContain("does not exist")
        expect(failures[2]).toContain("HTTP 429: rate limited")
        expect(failures[3]).toContain("HTTP 500: the provider failed")
        expect(failures[3]).toContain("upstream exploded")
        expect(failures[4]).toContain("model 'test-model' not found")
      })
    ))

  it.live("a stream cut mid-way, an error event mid-stream, and a refused connection are errors", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply(
          { chunks: [delta({ content: "partial" })], cut: true },
          { chunks: [delta({ content: "partial" })] }, // ends cleanly but without finish_reason or [DONE]
          { chunks: [delta({ content: "x" }), sse({ error: { message: "context size exceeded" } })] }
        )
        const cut = errorText(yield* Effect.flip(run(server)))
        expect(cut).toMatch(/stream (broke off|ended before the model finished)/)
        expect(errorText(yield* Effect.flip(run(server)))).toContain("ended before the model finished")
        expect(errorText(yield* Effect.flip(run(server)))).toContain("context size exceeded")
        // A port nobody listens on (a fresh one: fetch may keep pooled sockets to the fake server).
        const url = yield* Effect.promise(async () => {
          const other = await startFakeProvider()
          await other.close()
          return other.url
        })
        const refused = yield* Effect.flip(
          LanguageModel.streamText({ prompt: "x" }).pipe(
            Stream.runCollect,
            Effect.provide(ChatCompletions.layer({ baseUrl: `${url}/v1`, model: "m", apiKey: Redacted.make(KEY) })),
            Effect.provide(FetchHttpClient.layer)
          )
        )
        expect(refused._tag).toBe("HttpRequestError")
        expect(errorText(refused)).toMatch(/cannot reach http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: .*ECONNREFUSED/)
        expect(JSON.stringify(refused)).not.toContain(KEY)
      })
    ))

  it.live("interrupting the stream aborts the HTTP request", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({ chunks: [delta({ content: "thinking…" })], hang: true })
        const fiber = yield* stream(server).pipe(Stream.runDrain, Effect.fork)
        // Wait until the request is in flight, then cancel the turn.
        for (let i = 0; i < 400 && server.requests.length === 0; i++) yield* Effect.sleep("5 millis")
        expect(server.requests).toHaveLength(1)
        yield* Effect.sleep("20 millis")
        yield* Fiber.interrupt(fiber)
        yield* Effect.promise(() => server.nextAbort(3000))
        expect(server.clientAborts()).toBe(1)
      })
    ))

  it.live("generateText joins the deltas", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({ chunks: [delta({ content: "Hel" }), delta({ content: "lo" }, "stop"), "data: [DONE]\n\n"] })
        const response = yield* LanguageModel.generateText({ prompt: "hi" }).pipe(Effect.provide(layer(server)), Effect.provide(FetchHttpClient.layer))
        expect(response.text).toBe("Hello")
        expect(response.finishReason).toBe("stop")
      })
    ))
})
