/**
 * How a provider's failures become `AiError`s a person can act on: the status, what it usually
 * means for this provider, and the server's own message. Nothing here ever holds a request's
 * headers, so an API key cannot leak into an error, a log line or the agent panel.
 */
import * as AiError from "@effect/ai/AiError"
import * as Option from "effect/Option"

export interface Endpoint {
  /** "ChatCompletions" | "AnthropicMessages": the module named in the error. */
  readonly module: string
  /** The URL posted to (built from the base URL; never contains a key). */
  readonly url: string
  /** Where the key comes from, for the 401 hint (e.g. "OPENAI_API_KEY"); undefined when none is used. */
  readonly apiKeyEnv: string | undefined
  readonly model: string
}

const request = (url: string) => ({
  method: "POST" as const,
  url,
  urlParams: [],
  hash: Option.none(),
  headers: {}
})

/** The server's message out of the usual error bodies (OpenAI, Anthropic, Ollama, llama.cpp, vLLM). */
export const serverMessage = (body: string): string => {
  const trimmed = body.trim()
  try {
    const json = JSON.parse(trimmed) as { error?: unknown; message?: unknown; detail?: unknown }
    const error = json.error
    if (typeof error === "string") return error
    if (error && typeof error === "object" && typeof (error as { message?: unknown }).message === "string") {
      return (error as { message: string }).message
    }
    if (typeof json.message === "string") return json.message
    if (typeof json.detail === "string") return json.detail
  } catch {
    // not JSON: the text itself (an HTML error page is cut short below)
  }
  return trimmed.length > 300 ? `${trimmed.slice(0, 300)}…` : trimmed
}

const hint = (status: number, endpoint: Endpoint): string => {
  switch (status) {
    case 401:
    case 403:
      return endpoint.apiKeyEnv === undefined
        ? "the server wants an API key (pass --api-key-env NAME)"
        : `the API key was rejected (check ${endpoint.apiKeyEnv})`
    case 404:
      return `unknown model "${endpoint.model}" or wrong base URL (${endpoint.url})`
    case 408:
      return "the request timed out"
    case 413:
      return "the conversation is too large for the server"
    case 429:
      return "rate limited or out of quota; try again later"
    case 400:
    case 422:
      return "the server rejected the request"
    default:
      return status >= 500 ? "the provider failed; try again later" : "unexpected response"
  }
}

export const statusError = (endpoint: Endpoint, status: number, body: string): AiError.HttpResponseError => {
  const message = serverMessage(body)
  return new AiError.HttpResponseError({
    module: endpoint.module,
    method: "streamText",
    reason: "StatusCode",
    request: request(endpoint.url),
    response: { status, headers: {} },
    description: `HTTP ${status}: ${hint(status, endpoint)}${message === "" ? "" : ` — ${message}`}`
  }, { disableValidation: true })
}

/** The server could not be reached, or the connection broke. */
export const transportError = (endpoint: Endpoint, cause: unknown): AiError.HttpRequestError =>
  new AiError.HttpRequestError({
    module: endpoint.module,
    method: "streamText",
    reason: "Transport",
    request: request(endpoint.url),
    description: `cannot reach ${endpoint.url}: ${causeText(cause)}`
  }, { disableValidation: true })

/** The stream broke off, or carried an error event, or said something we cannot read. */
export const streamError = (endpoint: Endpoint, description: string): AiError.UnknownError =>
  new AiError.UnknownError({ module: endpoint.module, method: "streamText", description }, { disableValidation: true })

/** The server sent nothing for `ms` (see `ProviderConfig.idleTimeoutMs`); the request was abandoned. */
export const idleTimeout = (endpoint: Endpoint, ms: number, when: string): AiError.UnknownError =>
  streamError(
    endpoint,
    `no data from ${endpoint.url} for ${Number((ms / 1000).toFixed(3))} s ${when}, so the request was abandoned ` +
      "(idle timeout: --model-idle-timeout-ms or DSH_ACP_MODEL_IDLE_TIMEOUT_MS); send the prompt again to retry"
  )

/** The innermost message of an error chain (fetch hides ECONNREFUSED two causes deep). */
export const causeText = (cause: unknown): string => {
  let current: unknown = cause
  let text = "unknown error"
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    const c = current as { message?: unknown; code?: unknown; cause?: unknown; description?: unknown }
    if (typeof c.code === "string") return typeof c.message === "string" ? c.message : c.code
    if (typeof c.description === "string" && c.description !== "") text = c.description
    else if (typeof c.message === "string" && c.message !== "") text = c.message
    current = c.cause
  }
  return text
}

/** One line for the agent panel: the description without the generic suggestions `AiError.message` adds. */
export const describe = (error: AiError.AiError): string => {
  switch (error._tag) {
    case "HttpResponseError":
    case "HttpRequestError":
    case "MalformedInput":
    case "MalformedOutput":
    case "UnknownError":
      return `${error.module}: ${error.description ?? error._tag}`
  }
}
