/**
 * A `LanguageModel` over Anthropic's Messages API (`POST {baseUrl}/v1/messages`, streamed).
 * Written on the same footing as ChatCompletions rather than using `@effect/ai-anthropic`, which
 * brings a tokenizer dependency tree, +0.2 s of load time bundled, and renames a tool called `bash`
 * to its built-in one (see model-notes). Invalid tool calls become `InvalidToolCall` error parts.
 *
 * Extended thinking is not requested; a reasoning part that carries a signature in
 * `options.anthropic.signature` is sent back as a thinking block, one without is dropped (the API
 * rejects unsigned thinking). The signature is on the `reasoning-end` part's
 * `metadata.anthropic.signature`.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as HttpClient from "@effect/platform/HttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Parts from "./Parts.js"
import * as SseLanguageModel from "./SseLanguageModel.js"

export type Config = SseLanguageModel.ProviderConfig

// ---------------------------------------------------------------------------------------------
// Request

type Block =
  | { type: "text"; text: string }
  | { type: "image"; source: { type: "base64"; media_type: string; data: string } | { type: "url"; url: string } }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content: string; is_error?: boolean }
  | { type: "thinking"; thinking: string; signature: string }
interface Message {
  role: "user" | "assistant"
  content: Array<Block>
}

const fileBlock = (part: Prompt.FilePart): Block => {
  if (part.mediaType.startsWith("image/")) {
    return {
      type: "image",
      source: part.data instanceof URL
        ? { type: "url", url: part.data.toString() }
        : { type: "base64", media_type: part.mediaType, data: typeof part.data === "string" ? part.data : Buffer.from(part.data).toString("base64") }
    }
  }
  return { type: "text", text: `[file ${part.fileName ?? ""} (${part.mediaType}) not sent: unsupported by this provider]` }
}

/** Tool input must be an object; the raw text of an invalid call (a string) is wrapped. */
const toolInput = (params: unknown): unknown => {
  if (typeof params !== "string") return params ?? {}
  try {
    const parsed = JSON.parse(params)
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) return parsed
  } catch {
    // fall through
  }
  return { invalid_arguments: params }
}

const signatureOf = (part: Prompt.ReasoningPart): string | undefined => {
  const anthropic = (part.options as Record<string, Record<string, unknown> | undefined>)["anthropic"]
  return typeof anthropic?.["signature"] === "string" ? anthropic["signature"] : undefined
}

export const encodePrompt = (prompt: Prompt.Prompt): { system: string | undefined; messages: Array<Message> } => {
  const system: Array<string> = []
  const messages: Array<Message> = []
  // The API wants user/assistant alternation: consecutive same-role messages are merged.
  const push = (role: Message["role"], content: Array<Block>) => {
    if (content.length === 0) return
    const last = messages.at(-1)
    if (last?.role === role) last.content.push(...content)
    else messages.push({ role, content })
  }
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        system.push(message.content)
        break
      case "user":
        push("user", message.content.map((p): Block => p.type === "text" ? { type: "text", text: p.text } : fileBlock(p)))
        break
      case "assistant": {
        const content: Array<Block> = []
        const results: Array<Block> = []
        for (const p of message.content) {
          if (p.type === "text" && p.text !== "") content.push({ type: "text", text: p.text })
          else if (p.type === "reasoning") {
            const signature = signatureOf(p)
            if (signature !== undefined) content.push({ type: "thinking", thinking: p.text, signature })
          } else if (p.type === "tool-call" && !p.providerExecuted) content.push({ type: "tool_use", id: p.id, name: p.name, input: toolInput(p.params) })
          else if (p.type === "tool-result") results.push({ type: "tool_result", tool_use_id: p.id, content: Parts.encodeResult(p.result), ...(p.isFailure ? { is_error: true } : {}) })
        }
        push("assistant", content)
        push("user", results)
        break
      }
      case "tool":
        push("user", message.content.map((r): Block => ({ type: "tool_result", tool_use_id: r.id, content: Parts.encodeResult(r.result), ...(r.isFailure ? { is_error: true } : {}) })))
        break
    }
  }
  return { system: system.length === 0 ? undefined : system.join("\n\n"), messages }
}

const encodeToolChoice = (choice: LanguageModel.ProviderOptions["toolChoice"]) => {
  if (choice === "auto") return { type: "auto" }
  if (choice === "none") return { type: "none" }
  if (choice === "required") return { type: "any" }
  if ("tool" in choice) return { type: "tool", name: choice.tool }
  return { type: choice.mode === "required" ? "any" : "auto" }
}

export const requestBody = (config: Config, options: LanguageModel.ProviderOptions) => {
  const { messages, system } = encodePrompt(options.prompt)
  return {
    model: config.model,
    max_tokens: config.maxTokens ?? 8192,
    stream: true,
    ...(system === undefined ? {} : { system }),
    messages,
    ...(options.tools.length === 0
      ? {}
      : {
        tools: options.tools.map((tool) => ({
          name: tool.name,
          description: Tool.getDescription(tool as any) ?? "",
          input_schema: Tool.getJsonSchema(tool as any)
        })),
        tool_choice: encodeToolChoice(options.toolChoice)
      })
  }
}

// ---------------------------------------------------------------------------------------------
// Response

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const stopReasons: Record<string, Response.FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  tool_use: "tool-calls",
  refusal: "content-filter",
  pause_turn: "pause"
}

interface OpenBlock {
  readonly kind: "text" | "reasoning" | "tool" | "other"
  readonly id: string
  readonly name: string
  json: string
  signature: string
}

/** The state of one response. Exported for tests that feed events directly. */
export class Decoder {
  private readonly blocks = new Map<number, OpenBlock>()
  private readonly usage = { inputTokens: undefined as number | undefined, outputTokens: undefined as number | undefined, cachedInputTokens: undefined as number | undefined }
  private stopReason: string | undefined = undefined
  stopped = false

  constructor(private readonly tools: ReadonlyArray<Tool.Any>) {}

  /** The parts of one event; an `error` event is returned as `{ error }` for the caller to fail with. */
  event(event: Json): Array<Response.StreamPartEncoded> | { readonly error: string } {
    const out: Array<Response.StreamPartEncoded> = []
    switch (event.type) {
      case "message_start": {
        const m = event.message ?? {}
        this.usage.inputTokens = m.usage?.input_tokens
        this.usage.outputTokens = m.usage?.output_tokens
        this.usage.cachedInputTokens = m.usage?.cache_read_input_tokens ?? undefined
        out.push({ type: "response-metadata", ...(m.id ? { id: m.id } : {}), ...(m.model ? { modelId: m.model } : {}) })
        break
      }
      case "content_block_start": {
        const b = event.content_block ?? {}
        const index: number = event.index
        if (b.type === "text") {
          this.blocks.set(index, { kind: "text", id: `text-${index}`, name: "", json: "", signature: "" })
          out.push({ type: "text-start", id: `text-${index}` })
          if (b.text) out.push({ type: "text-delta", id: `text-${index}`, delta: b.text })
        } else if (b.type === "thinking") {
          this.blocks.set(index, { kind: "reasoning", id: `reasoning-${index}`, name: "", json: "", signature: "" })
          out.push({ type: "reasoning-start", id: `reasoning-${index}` })
          if (b.thinking) out.push({ type: "reasoning-delta", id: `reasoning-${index}`, delta: b.thinking })
        } else if (b.type === "tool_use") {
          this.blocks.set(index, { kind: "tool", id: b.id, name: b.name, json: "", signature: "" })
          if (this.tools.some((t) => t.name === b.name)) out.push({ type: "tool-params-start", id: b.id, name: b.name })
        } else {
          // redacted_thinking, server tools: nothing we show.
          this.blocks.set(index, { kind: "other", id: "", name: "", json: "", signature: "" })
        }
        break
      }
      case "content_block_delta": {
        const block = this.blocks.get(event.index)
        const d = event.delta ?? {}
        if (block === undefined) break
        if (d.type === "text_delta" && block.kind === "text") out.push({ type: "text-delta", id: block.id, delta: d.text })
        else if (d.type === "thinking_delta" && block.kind === "reasoning") out.push({ type: "reasoning-delta", id: block.id, delta: d.thinking })
        else if (d.type === "signature_delta") block.signature += d.signature
        else if (d.type === "input_json_delta" && block.kind === "tool") {
          block.json += d.partial_json
          if (d.partial_json !== "" && this.tools.some((t) => t.name === block.name)) out.push({ type: "tool-params-delta", id: block.id, delta: d.partial_json })
        }
        break
      }
      case "content_block_stop": {
        const block = this.blocks.get(event.index)
        this.blocks.delete(event.index)
        if (block?.kind === "text") out.push({ type: "text-end", id: block.id })
        else if (block?.kind === "reasoning") {
          out.push({ type: "reasoning-end", id: block.id, ...(block.signature === "" ? {} : { metadata: { anthropic: { signature: block.signature } } }) })
        } else if (block?.kind === "tool") {
          if (this.tools.some((t) => t.name === block.name)) out.push({ type: "tool-params-end", id: block.id })
          out.push(Parts.finishToolCall(this.tools, { id: block.id, name: block.name, arguments: block.json }))
        }
        break
      }
      case "message_delta":
        if (event.delta?.stop_reason) this.stopReason = event.delta.stop_reason
        if (typeof event.usage?.output_tokens === "number") this.usage.outputTokens = event.usage.output_tokens
        if (typeof event.usage?.input_tokens === "number") this.usage.inputTokens = event.usage.input_tokens
        break
      case "message_stop":
        this.stopped = true
        break
      case "error":
        return { error: `${event.error?.type ?? "error"}: ${event.error?.message ?? JSON.stringify(event)}` }
      default:
        // ping, and event types added later
        break
    }
    return out
  }

  end(): Array<Response.StreamPartEncoded> {
    const { cachedInputTokens, inputTokens, outputTokens } = this.usage
    return [{
      type: "finish",
      reason: this.stopReason === undefined ? "unknown" : stopReasons[this.stopReason] ?? "other",
      usage: {
        inputTokens,
        outputTokens,
        totalTokens: inputTokens !== undefined && outputTokens !== undefined ? inputTokens + outputTokens : undefined,
        ...(cachedInputTokens === undefined ? {} : { cachedInputTokens })
      }
    }]
  }
}

// ---------------------------------------------------------------------------------------------
// The service

export const make = (config: Config): Effect.Effect<LanguageModel.Service, never, HttpClient.HttpClient> => {
  const url = `${config.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}/v1/messages`
  return SseLanguageModel.make({
    endpoint: { module: "AnthropicMessages", url, apiKeyEnv: config.apiKeyEnv, model: config.model },
    idleTimeoutMs: config.idleTimeoutMs,
    headers: {
      "anthropic-version": "2023-06-01",
      ...config.headers,
      ...(config.apiKey === undefined ? {} : { "x-api-key": Redacted.value(config.apiKey) })
    },
    body: (options) => requestBody(config, options),
    decoder: (tools) => {
      const decoder = new Decoder(tools)
      return { decode: (event) => decoder.event(event as Json), finished: () => decoder.stopped, end: () => decoder.end() }
    }
  })
}

export const layer = (config: Config): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(config))
