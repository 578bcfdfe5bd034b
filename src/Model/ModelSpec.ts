/**
 * Which model the agent talks to: `--model <provider>:<model>`, `--base-url`, `--api-key-env`, or
 * the same through `DSH_ACP_MODEL`, `DSH_ACP_BASE_URL`, `DSH_ACP_API_KEY_ENV` (so Zed's
 * `agent_servers.<name>.env` can carry them). Resolved once at start-up, so a bad value stops the
 * command with a clear message instead of failing at the first prompt.
 *
 * The key is read from the environment only (never from the command line, where `ps` would show
 * it) and kept `Redacted`, so it cannot end up in an error message or a log line.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"

export type Provider = "openai" | "anthropic" | "openai-compatible"

export const PROVIDERS: ReadonlyArray<Provider> = ["openai", "anthropic", "openai-compatible"]

/** The raw settings, as given on the command line or in the environment. */
export interface Settings {
  readonly model?: string | undefined
  readonly baseUrl?: string | undefined
  readonly apiKeyEnv?: string | undefined
  /** Milliseconds, as typed (`--model-idle-timeout-ms`, `DSH_ACP_MODEL_IDLE_TIMEOUT_MS`); `0` turns it off. */
  readonly idleTimeoutMs?: string | undefined
}

/**
 * How long a model request may go without receiving a byte (before its response starts, or
 * between two reads of it) before it is abandoned with a provider error; the session stays usable.
 * Long on purpose: it is a backstop for a dead connection, not a latency bound (Stop cancels at any
 * time). A reasoning model can think for minutes before its first token when the provider sends
 * no keep-alives, and a local server processing a long prompt on a CPU is silent as long.
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000

export interface ModelSpec {
  readonly provider: Provider
  /** The model id sent to the server; may itself contain colons (`qwen3:8b`). */
  readonly model: string
  /** Without a trailing slash. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** The variable the key came from (named in hints), if any. */
  readonly apiKeyEnv: string | undefined
  /** See {@link DEFAULT_IDLE_TIMEOUT_MS}; `undefined`: no idle timeout. */
  readonly idleTimeoutMs: number | undefined
}

const DEFAULT_BASE_URL: Partial<Record<Provider, string>> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com"
}

const DEFAULT_KEY_ENV: Partial<Record<Provider, string>> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY"
}

/** The settings from `DSH_ACP_*` variables; empty ones count as unset. */
export const settingsFromEnv = (env: Readonly<Record<string, string | undefined>>): Settings => ({
  model: env["DSH_ACP_MODEL"] || undefined,
  baseUrl: env["DSH_ACP_BASE_URL"] || undefined,
  apiKeyEnv: env["DSH_ACP_API_KEY_ENV"] || undefined,
  idleTimeoutMs: env["DSH_ACP_MODEL_IDLE_TIMEOUT_MS"] || undefined
})

/** Command-line settings win over the environment's, one by one. */
export const mergeSettings = (cli: Settings, env: Settings): Settings => ({
  model: cli.model ?? env.model,
  baseUrl: cli.baseUrl ?? env.baseUrl,
  apiKeyEnv: cli.apiKeyEnv ?? env.apiKeyEnv,
  idleTimeoutMs: cli.idleTimeoutMs ?? env.idleTimeoutMs
})

/** Splits `provider:model` at the first colon only: `openai-compatible:qwen3:8b` is model `qwen3:8b`. */
export const parseModel = (value: string): Either.Either<{ provider: Provider; model: string }, string> => {
  const colon = value.indexOf(":")
  const provider = colon < 0 ? value : value.slice(0, colon)
  const model = colon < 0 ? "" : value.slice(colon + 1).trim()
  if (!PROVIDERS.includes(provider as Provider)) {
    return Either.left(
      `--model must be <provider>:<model> with provider ${PROVIDERS.join(", ")} (e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, openai-compatible:qwen3:8b), got "${value}"`
    )
  }
  if (model === "") return Either.left(`--model ${provider}: needs a model name after the colon, e.g. ${provider}:${provider === "anthropic" ? "claude-sonnet-4-5" : provider === "openai" ? "gpt-4.1" : "qwen3:8b"}`)
  return Either.right({ provider: provider as Provider, model })
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The spec, or the message to print; `undefined` when no model is set (the shell harness runs).
 * A base URL or key variable without a model is an error too: the user meant to use a model.
 */
export const resolve = (
  settings: Settings,
  env: Readonly<Record<string, string | undefined>>
): Either.Either<ModelSpec | undefined, string> => {
  if (settings.model === undefined) {
    if (settings.baseUrl !== undefined || settings.apiKeyEnv !== undefined || settings.idleTimeoutMs !== undefined) {
      return Either.left("--base-url, --api-key-env and --model-idle-timeout-ms need --model <provider>:<model> (or DSH_ACP_MODEL)")
    }
    return Either.right(undefined)
  }
  const idle = settings.idleTimeoutMs
  if (idle !== undefined && !/^(0|[1-9][0-9]*)$/.test(idle)) {
    return Either.left(`--model-idle-timeout-ms needs a whole number of milliseconds (0: no idle timeout), got ${idle}`)
  }
  const idleTimeoutMs = idle === undefined ? DEFAULT_IDLE_TIMEOUT_MS : Number(idle) === 0 ? undefined : Number(idle)
  return Either.flatMap(parseModel(settings.model), ({ model, provider }) => {
    const rawUrl = settings.baseUrl ?? DEFAULT_BASE_URL[provider]
    if (rawUrl === undefined) {
      return Either.left(`--model ${provider}:… needs --base-url (or DSH_ACP_BASE_URL), e.g. http://127.0.0.1:11434/v1 for Ollama or http://127.0.0.1:8080/v1 for llama.cpp`)
    }
    let url: URL
    try {
      url = new URL(rawUrl)
    } catch {
      return Either.left(`--base-url must be an http(s) URL, got "${rawUrl}"`)
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return Either.left(`--base-url must be an http(s) URL, got "${rawUrl}"`)
    if (url.username !== "" || url.password !== "") return Either.left("--base-url must not contain credentials; put the key in an environment variable (--api-key-env)")
    const baseUrl = rawUrl.replace(/\/+$/, "")

    const keyEnv = settings.apiKeyEnv ?? DEFAULT_KEY_ENV[provider]
    if (keyEnv !== undefined && !ENV_NAME.test(keyEnv)) {
      return Either.left(`--api-key-env takes the NAME of an environment variable (e.g. MY_API_KEY), not the key itself`)
    }
    const key = keyEnv === undefined ? undefined : env[keyEnv]
    if (keyEnv !== undefined && (key === undefined || key.trim() === "")) {
      return Either.left(
        settings.apiKeyEnv === undefined
          ? `--model ${provider}:… needs an API key in ${keyEnv} (or name another variable with --api-key-env)`
          : `--api-key-env ${keyEnv}: that environment variable is not set`
      )
    }
    return Either.right({
      provider,
      model,
      baseUrl,
      apiKey: key === undefined ? undefined : Redacted.make(key.trim()),
      apiKeyEnv: keyEnv,
      idleTimeoutMs
    })
  })
}
