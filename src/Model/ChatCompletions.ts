/**
 * A `LanguageModel` over the Chat Completions wire format (`POST {baseUrl}/chat/completions`,
 * streamed), which OpenAI, llama.cpp, Ollama, vLLM, LM Studio and OpenRouter all speak.
 * `@effect/ai-openai` speaks only the Responses API, hence our own (see model-notes).
 *
 * Tool calls: arguments arrive in pieces keyed by `index`; a finished call that `LanguageModel`
 * would refuse to decode is passed on as an `InvalidToolCall` error part (see InvalidToolCall.ts).
 * Tool results go on the wire as text: a string result verbatim, anything else as JSON.
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
import * as ProviderError from "./ProviderError.js"

export type Config = SseLanguageModel.ProviderConfig

// ---------------------------------------------------------------------------------------------
// Request

type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | Array<UserContent> }
  | { role: "assistant"; content: string | null; tool_calls?: Array<WireToolCall> }
  | { role: "tool"; tool_call_id: string; content: string }
type UserContent = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } }
interface WireToolCall {
  id: string
  type: "function"
  function: { name: string; arguments: string }
}

const base64 = (data: Uint8Array) => Buffer.from(data).toString("base64")

const fileContent = (part: Prompt.FilePart): UserContent => {
  if (part.mediaType.startsWith("image/")) {
    const url = part.data instanceof URL
      ? part.data.toString()
      : `data:${part.mediaType};base64,${typeof part.data === "string" ? part.data : base64(part.data)}`
    return { type: "image_url", image_url: { url } }
  }
  // Chat Completions has no general file part; say what was there rather than drop it silently.
  return { type: "text", text: `[file ${part.fileName ?? ""} (${part.mediaType}) not sent: unsupported by this provider]` }
}

/**
 * Tool-call params as the wire's `arguments` string. A string is the raw text of a call we could
 * not decode (InvalidToolCall): sent as is when it is a JSON object, else wrapped, because chat
 * templates (llama.cpp) parse the history's arguments and fail on anything else.
 */
export const encodeArguments = (params: unknown): string => {
  if (typeof params !== "string") return JSON.stringify(params ?? {})
  try {
    const parsed = JSON.parse(params)
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) return params
  } catch {
    // fall through
  }
  return JSON.stringify({ invalid_arguments: params })
}

export const encodeMessages = (prompt: Prompt.Prompt): Array<ChatMessage> => {
  const out: Array<ChatMessage> = []
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: message.content })
        break
      case "user": {
        const content = message.content.map((part): UserContent => part.type === "text" ? { type: "text", text: part.text } : fileContent(part))
        out.push({
          role: "user",
          content: content.every((c) => c.type === "text") ? content.map((c) => (c as { text: string }).text).join("\n") : content
        })
        break
      }
      case "assistant": {
        // Reasoning is not sent back: Chat Completions has no field for it, and DeepSeek rejects it.
        const text = message.content.flatMap((p) => p.type === "text" ? [p.text] : []).join("")
        const calls = message.content.flatMap((p): Array<WireToolCall> =>
          p.type === "tool-call" && !p.providerExecuted
            ? [{ id: p.id, type: "function", function: { name: p.name, arguments: encodeArguments(p.params) } }]
            : []
        )
        const results = message.content.flatMap((p) => p.type === "tool-result" ? [p] : [])
        out.push(calls.length > 0 ? { role: "assistant", content: text === "" ? null : text, tool_calls: calls } : { role: "assistant", content: text })
        for (const r of results) out.push({ role: "tool", tool_call_id: r.id, content: Parts.encodeResult(r.result) })
        break
      }
      case "tool":
        for (const r of message.content) out.push({ role: "tool", tool_call_id: r.id, content: Parts.encodeResult(r.result) })
        break
    }
  }
  return out
}

export const encodeTools = (tools: ReadonlyArray<Tool.Any>) =>
  tools.map((tool) => ({
    type: "function" as const,
    function: {
      name: tool.name,
      description: Tool.getDescription(tool as any) ?? "",
      parameters: Tool.getJsonSchema(tool as any)
    }
  }))

const encodeToolChoice = (choice: LanguageModel.ProviderOptions["toolChoice"]) => {
  if (typeof choice === "string") return choice
  if ("tool" in choice) return { type: "function", function: { name: choice.tool } }
  return choice.mode === "required" ? "required" : "auto"
}

export const requestBody = (config: Config, options: LanguageModel.ProviderOptions) => ({
  model: config.model,
  messages: encodeMessages(options.prompt),
  stream: true,
  stream_options: { include_usage: true },
  ...(config.maxTokens === undefined ? {} : { max_tokens: config.maxTokens }),
  ...(options.tools.length === 0
    ? {}
    : { tools: encodeTools(options.tools), tool_choice: encodeToolChoice(options.toolChoice) })
})

// ---------------------------------------------------------------------------------------------
// Response

interface Chunk {
  readonly id?: string
  readonly model?: string
  readonly created?: number
  readonly error?: unknown
  readonly choices?: ReadonlyArray<{
    readonly delta?: {
      readonly content?: string | null
      readonly reasoning_content?: string | null
      readonly reasoning?: string | null
      readonly tool_calls?: ReadonlyArray<{
        readonly index?: number
        readonly id?: string | null
        readonly function?: { readonly name?: string | null; readonly arguments?: string | null }
      }>
    }
    readonly finish_reason?: string | null
  }>
  readonly usage?: {
    readonly prompt_tokens?: number
    readonly completion_tokens?: number
    readonly total_tokens?: number
    readonly completion_tokens_details?: { readonly reasoning_tokens?: number }
    readonly prompt_tokens_details?: { readonly cached_tokens?: number }
  } | null
}

const finishReasons: Record<string, Response.FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool-calls",
  function_call: "tool-calls",
  content_filter: "content-filter"
}

interface PendingCall {
  id: string
  name: string
  arguments: string
  started: boolean
}

/**
 * The state of one response: which text/reasoning block is open, the tool calls being assembled.
 * Exported for tests that feed chunks directly.
 */
export class Decoder {
  private textOpen = false
  private reasoningOpen = false
  private block = 0
  private readonly calls: Array<PendingCall> = []
  private readonly byIndex = new Map<number, PendingCall>()
  private callsFlushed = false
  private metadataSent = false
  finishReason: string | undefined = undefined
  private usage: typeof Response.Usage.Encoded = { inputTokens: undefined, outputTokens: undefined, totalTokens: undefined }

  constructor(private readonly tools: ReadonlyArray<Tool.Any>) {}

  /** The parts of one chunk; a chunk carrying `error` is returned as `{ error }` for the caller to fail with. */
  chunk(chunk: Chunk): Array<Response.StreamPartEncoded> | { readonly error: string } {
    if (chunk.error !== undefined && chunk.error !== null) return { error: ProviderError.serverMessage(JSON.stringify({ error: chunk.error })) }
    const out: Array<Response.StreamPartEncoded> = []
    if (!this.metadataSent && (chunk.id !== undefined || chunk.model !== undefined)) {
      this.metadataSent = true
      out.push({
        type: "response-metadata",
        ...(chunk.id ? { id: chunk.id } : {}),
        ...(chunk.model ? { modelId: chunk.model } : {}),
        ...(typeof chunk.created === "number" && chunk.created > 0 ? { timestamp: new Date(chunk.created * 1000).toISOString() } : {})
      })
    }
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta ?? {}
      const reasoning = delta.reasoning_content ?? delta.reasoning
      if (typeof reasoning === "string" && reasoning !== "") {
        this.closeText(out)
        if (!this.reasoningOpen) {
          this.reasoningOpen = true
          out.push({ type: "reasoning-start", id: `reasoning-${++this.block}` })
        }
        out.push({ type: "reasoning-delta", id: `reasoning-${this.block}`, delta: reasoning })
      }
      if (typeof delta.content === "string" && delta.content !== "") {
        this.closeReasoning(out)
        if (!this.textOpen) {
          this.textOpen = true
          out.push({ type: "text-start", id: `text-${++this.block}` })
        }
        out.push({ type: "text-delta", id: `text-${this.block}`, delta: delta.content })
      }
      for (const [position, call] of (delta.tool_calls ?? []).entries()) {
        this.closeText(out)
        this.closeReasoning(out)
        const index = call.index ?? position
        let pending = this.byIndex.get(index)
        // Some servers reuse index 0 for every call; a new id then means a new call.
        if (pending === undefined || (call.id && pending.id !== "" && call.id !== pending.id)) {
          pending = { id: call.id ?? "", name: "", arguments: "", started: false }
          this.calls.push(pending)
          this.byIndex.set(index, pending)
        }
        if (call.id && pending.id === "") pending.id = call.id
        if (call.function?.name) pending.name += call.function.name
        const args = call.function?.arguments ?? ""
        pending.arguments += args
        if (!pending.started && pending.name !== "") {
          pending.started = true
          if (pending.id === "") pending.id = `call_${this.calls.length}_${Date.now().toString(36)}`
          // Only a known tool gets an early card: an unknown one ends as an InvalidToolCall anyway.
          if (this.tools.some((t) => t.name === pending!.name)) {
            out.push({ type: "tool-params-start", id: pending.id, name: pending.name })
            if (pending.arguments !== "") out.push({ type: "tool-params-delta", id: pending.id, delta: pending.arguments })
          }
        } else if (pending.started && args !== "" && this.tools.some((t) => t.name === pending!.name)) {
          out.push({ type: "tool-params-delta", id: pending.id, delta: args })
        }
      }
      if (choice.finish_reason) {
        this.finishReason = choice.finish_reason
        this.flush(out)
      }
    }
    if (chunk.usage) {
      const u = chunk.usage
      this.usage = {
        inputTokens: u.prompt_tokens,
        outputTokens: u.completion_tokens,
        totalTokens: u.total_tokens ?? (u.prompt_tokens !== undefined && u.completion_tokens !== undefined ? u.prompt_tokens + u.completion_tokens : undefined),
        ...(u.completion_tokens_details?.reasoning_tokens !== undefined ? { reasoningTokens: u.completion_tokens_details.reasoning_tokens } : {}),
        ...(u.prompt_tokens_details?.cached_tokens !== undefined ? { cachedInputTokens: u.prompt_tokens_details.cached_tokens } : {})
      }
    }
    return out
  }

  /** The closing parts: open blocks, unfinished tool calls, and `finish` with the usage. */
  end(): Array<Response.StreamPartEncoded> {
    const out: Array<Response.StreamPartEncoded> = []
    this.flush(out)
    const reason: Response.FinishReason = this.calls.length > 0
      // Ollama says "stop" even when it called tools; what matters to the loop is that it did.
      ? "tool-calls"
      : (this.finishReason === undefined ? "unknown" : finishReasons[this.finishReason] ?? "other")
    out.push({ type: "finish", reason, usage: this.usage })
    return out
  }

  private flush(out: Array<Response.StreamPartEncoded>) {
    this.closeText(out)
    this.closeReasoning(out)
    if (this.callsFlushed) return
    this.callsFlushed = true
    for (const call of this.calls) {
      if (call.id === "") call.id = `call_${Date.now().toString(36)}`
      if (call.started && this.tools.some((t) => t.name === call.name)) out.push({ type: "tool-params-end", id: call.id })
      out.push(Parts.finishToolCall(this.tools, call))
    }
  }

  private closeText(out: Array<Response.StreamPartEncoded>) {
    if (this.textOpen) {
      this.textOpen = false
      out.push({ type: "text-end", id: `text-${this.block}` })
    }
  }

  private closeReasoning(out: Array<Response.StreamPartEncoded>) {
    if (this.reasoningOpen) {
      this.reasoningOpen = false
      out.push({ type: "reasoning-end", id: `reasoning-${this.block}` })
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The service

export const make = (config: Config): Effect.Effect<LanguageModel.Service, never, HttpClient.HttpClient> => {
  const url = `${config.baseUrl.replace(/\/+$/, "")}/chat/completions`
  return SseLanguageModel.make({
    endpoint: { module: "ChatCompletions", url, apiKeyEnv: config.apiKeyEnv, model: config.model },
    idleTimeoutMs: config.idleTimeoutMs,
    headers: {
      ...config.headers,
      ...(config.apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(config.apiKey)}` })
    },
    body: (options) => requestBody(config, options),
    // A usage-only chunk may follow the finish reason: read on until `[DONE]`.
    doneMarker: "[DONE]",
    decoder: (tools) => {
      const decoder = new Decoder(tools)
      return { decode: (event) => decoder.chunk(event as Chunk), finished: () => decoder.finishReason !== undefined, end: () => decoder.end() }
    }
  })
}

export const layer = (config: Config): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(config))
