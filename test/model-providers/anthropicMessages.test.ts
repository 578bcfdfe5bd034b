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
import * as AnthropicMessages from "../../src/Model/AnthropicMessages.js"
import * as InvalidToolCall from "../../src/Model/InvalidToolCall.js"
import * as ProviderError from "../../src/Model/ProviderError.js"
import { type FakeProvider, sse, withServer } from "../support/fakeProvider.js"
import { simple } from "../support/responseParts.js"

// Named `bash` on purpose: @effect/ai-anthropic would rename it; our provider must not.
const Bash = Tool.make("bash", {
  description: "Run a bash command",
  parameters: { command: Schema.String },
  success: Schema.String
})
const tools = Toolkit.make(Bash)
const handlers = tools.toLayer({ bash: () => Effect.succeed("") })
const KEY = "sk-ant-test-secret-987654321"

const stream = (server: FakeProvider, prompt: Prompt.RawInput = "list files") =>
  LanguageModel.streamText({ prompt, toolkit: tools, disableToolCallResolution: true }).pipe(
    Stream.provideLayer(Layer.merge(
      AnthropicMessages.layer({ baseUrl: server.url, model: "claude-test", apiKey: Redacted.make(KEY), apiKeyEnv: "ANTHROPIC_API_KEY" }).pipe(
        Layer.provide(FetchHttpClient.layer)
      ),
      handlers
    ))
  )
const run = (server: FakeProvider, prompt?: Prompt.RawInput) =>
  stream(server, prompt).pipe(Stream.runCollect, Effect.map((c) => Array.from(c) as Array<Json>))

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const ev = (data: { type: string } & Record<string, unknown>) => sse(data, data.type)
const start = ev({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-test", content: [], usage: { input_tokens: 20, output_tokens: 1 } } })
const stop = (reason: string, outputTokens = 9) => [
  ev({ type: "message_delta", delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: outputTokens } }),
  ev({ type: "message_stop" })
]

describe("Anthropic Messages provider", () => {
  it.live("thinking, text, a tool_use with input_json_delta pieces, usage, stop_reason tool_use", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({
          chunks: [
            start,
            ev({ type: "ping" }),
            ev({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } }),
            ev({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Listing." } }),
            ev({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig-abc" } }),
            ev({ type: "content_block_stop", index: 0 }),
            ev({ type: "content_block_start", index: 1, content_block: { type: "text", text: "" } }),
            ev({ type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "I'll run ls." } }),
            ev({ type: "content_block_stop", index: 1 }),
            ev({ type: "content_block_start", index: 2, content_block: { type: "tool_use", id: "toolu_1", name: "bash", input: {} } }),
            ev({ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "" } }),
            ev({ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "{\"command\": \"l" } }),
            ev({ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "s\"}" } }),
            ev({ type: "content_block_stop", index: 2 }),
            ...stop("tool_use")
          ]
        })
        const parts = yield* run(server)
        expect(simple(parts)).toEqual([
          "reasoning-start",
          "reasoning-delta:Listing.",
          "reasoning-end",
          "text-start",
          "text-delta:I'll run ls.",
          "text-end",
          "tool-params-start:toolu_1:bash",
          "tool-params-delta:{\"command\": \"l",
          "tool-params-delta:s\"}",
          "tool-params-end",
          "tool-call:toolu_1:bash:{\"command\":\"ls\"}",
          "finish:tool-calls"
        ])
        expect((parts.find((p) => p.type === "reasoning-end") as { metadata: unknown }).metadata).toEqual({ anthropic: { signature: "sig-abc" } })
        const finish = parts.at(-1) as { usage: { inputTokens: number; outputTokens: number; totalTokens: number } }
        expect([finish.usage.inputTokens, finish.usage.outputTokens, finish.usage.totalTokens]).toEqual([20, 9, 29])

        const request = server.requests[0]!
        expect(request.path).toBe("/v1/messages")
        expect(request.headers["x-api-key"]).toBe(KEY)
        expect(request.headers["anthropic-version"]).toBe("2023-06-01")
        expect(request.headers.authorization).toBeUndefined()
        expect(request.body).toMatchObject({ model: "claude-test", stream: true, max_tokens: 8192, tool_choice: { type: "auto" } })
        expect(request.body.tools).toEqual([
          { name: "bash", description: "Run a bash command", input_schema: expect.objectContaining({ type: "object", required: ["command"] }) }
        ])
      })
    ))

  it.live("stop reasons map: end_turn, max_tokens, refusal", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const text = (t: string) => [
          ev({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
          ev({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: t } }),
          ev({ type: "content_block_stop", index: 0 })
        ]
        server.reply(
          { chunks: [start, ...text("done"), ...stop("end_turn")] },
          { chunks: [start, ...text("trunc"), ...stop("max_tokens")] },
          { chunks: [start, ...stop("refusal")] }
        )
        expect(simple(yield* run(server)).at(-1)).toBe("finish:stop")
        expect(simple(yield* run(server)).at(-1)).toBe("finish:length")
        expect(simple(yield* run(server)).at(-1)).toBe("finish:content-filter")
      })
    ))

  it.live("unknown tools and a call without its required input become InvalidToolCall parts, the stream goes on", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({
          chunks: [
            start,
            ev({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "t1", name: "str_replace_editor", input: {} } }),
            ev({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{\"path\":\"a\"}" } }),
            ev({ type: "content_block_stop", index: 0 }),
            ev({ type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "t2", name: "bash", input: {} } }),
            ev({ type: "content_block_stop", index: 1 }),
            ...stop("tool_use")
          ]
        })
        const parts = yield* run(server)
        const invalid = parts.flatMap((p) => InvalidToolCall.fromPart(p) ?? [])
        expect(invalid.map((c) => [c.id, c.name, c.reason])).toEqual([["t1", "str_replace_editor", "unknown-tool"], ["t2", "bash", "invalid-params"]])
        expect(simple(parts).at(-1)).toBe("finish:tool-calls")
      })
    ))

  it.live("encodes history: system apart, tool results as a user turn, alternation kept, signed thinking kept", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({ chunks: [start, ...stop("end_turn")] })
        const prompt = Prompt.fromMessages([
          Prompt.makeMessage("system", { content: "Be brief." }),
          Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: "run ls" })] }),
          Prompt.makeMessage("assistant", {
            content: [
              Prompt.makePart("reasoning", { text: "signed", options: { anthropic: { signature: "sig" } } }),
              Prompt.makePart("reasoning", { text: "unsigned" }),
              Prompt.makePart("tool-call", { id: "toolu_1", name: "bash", params: { command: "ls" }, providerExecuted: false })
            ]
          }),
          Prompt.makeMessage("tool", {
            content: [Prompt.makePart("tool-result", { id: "toolu_1", name: "bash", isFailure: true, result: "[exit 2]", providerExecuted: false })]
          }),
          Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: "why?" })] })
        ])
        yield* run(server, prompt)
        const body = server.requests[0]!.body
        expect(body.system).toBe("Be brief.")
        expect(body.messages).toEqual([
          { role: "user", content: [{ type: "text", text: "run ls" }] },
          {
            role: "assistant",
            content: [
              { type: "thinking", thinking: "signed", signature: "sig" },
              { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "ls" } }
            ]
          },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "[exit 2]", is_error: true }, { type: "text", text: "why?" }] }
        ])
      })
    ))

  it.live("HTTP errors, an error event, a cut stream; the key never shows", () =>
    withServer((server) =>
      Effect.gen(function*() {
        const err = (type: string, message: string) => JSON.stringify({ type: "error", error: { type, message } })
        server.reply(
          { status: 401, body: err("authentication_error", "invalid x-api-key") },
          { status: 404, body: err("not_found_error", "model: claude-test") },
          { status: 429, body: err("rate_limit_error", "Number of request tokens has exceeded your rate limit") },
          { status: 529, body: err("overloaded_error", "Overloaded") },
          { chunks: [start, ev({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })] },
          { chunks: [start, ev({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })], cut: true }
        )
        const messages: Array<string> = []
        for (let i = 0; i < 6; i++) {
          const error = yield* Effect.flip(run(server))
          expect(JSON.stringify(error)).not.toContain(KEY)
          messages.push(ProviderError.describe(error))
        }
        expect(messages[0]).toBe("AnthropicMessages: HTTP 401: the API key was rejected (check ANTHROPIC_API_KEY) — invalid x-api-key")
        expect(messages[1]).toContain("HTTP 404: unknown model \"claude-test\"")
        expect(messages[2]).toContain("HTTP 429: rate limited")
        expect(messages[3]).toContain("HTTP 529: the provider failed; try again later — Overloaded")
        expect(messages[4]).toContain("error mid-stream: overloaded_error: Overloaded")
        expect(messages[5]).toMatch(/stream (broke off|ended before the model finished)/)
      })
    ))

  it.live("interrupting the stream aborts the HTTP request", () =>
    withServer((server) =>
      Effect.gen(function*() {
        server.reply({ chunks: [start], hang: true })
        const fiber = yield* stream(server).pipe(Stream.runDrain, Effect.fork)
        for (let i = 0; i < 400 && server.requests.length === 0; i++) yield* Effect.sleep("5 millis")
        yield* Effect.sleep("20 millis")
        yield* Fiber.interrupt(fiber)
        yield* Effect.promise(() => server.nextAbort(3000))
        expect(server.clientAborts()).toBe(1)
      })
    ))
})
