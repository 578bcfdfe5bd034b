import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { parseArgs } from "../../src/Cli.js"
import * as ModelSpec from "../../src/Model/ModelSpec.js"

const ok = <A>(e: Either.Either<A, string>): A => {
  if (Either.isLeft(e)) throw new Error(`expected Right, got Left: ${e.left}`)
  return e.right
}
const err = <A>(e: Either.Either<A, string>): string => {
  if (Either.isRight(e)) throw new Error(`expected Left, got ${JSON.stringify(e.right)}`)
  return e.left
}

describe("ModelSpec", () => {
  it("parses provider:model, keeping colons in the model", () => {
    expect(ok(ModelSpec.parseModel("openai:gpt-4.1"))).toEqual({ provider: "openai", model: "gpt-4.1" })
    expect(ok(ModelSpec.parseModel("openai-compatible:qwen3:8b"))).toEqual({ provider: "openai-compatible", model: "qwen3:8b" })
    expect(ok(ModelSpec.parseModel("anthropic:claude-sonnet-4-5"))).toEqual({ provider: "anthropic", model: "claude-sonnet-4-5" })
    expect(err(ModelSpec.parseModel("gpt-4.1"))).toContain("--model must be <provider>:<model>")
    expect(err(ModelSpec.parseModel("ollama:qwen3"))).toContain("openai-compatible")
    expect(err(ModelSpec.parseModel("openai:"))).toContain("needs a model name")
  })

  it("defaults base URLs and key variables per provider; the key stays redacted", () => {
    const env = { OPENAI_API_KEY: "sk-o", ANTHROPIC_API_KEY: "sk-a" }
    const openai = ok(ModelSpec.resolve({ model: "openai:gpt-4.1" }, env))!
    expect(openai).toMatchObject({ provider: "openai", baseUrl: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_API_KEY" })
    expect(Redacted.value(openai.apiKey!)).toBe("sk-o")
    expect(String(openai.apiKey)).not.toContain("sk-o")
    expect(JSON.stringify(openai)).not.toContain("sk-o")
    const anthropic = ok(ModelSpec.resolve({ model: "anthropic:claude-sonnet-4-5" }, env))!
    expect(anthropic).toMatchObject({ baseUrl: "https://api.anthropic.com", apiKeyEnv: "ANTHROPIC_API_KEY" })
    const local = ok(ModelSpec.resolve({ model: "openai-compatible:qwen3:8b", baseUrl: "http://127.0.0.1:11434/v1/" }, env))!
    expect(local).toMatchObject({ model: "qwen3:8b", baseUrl: "http://127.0.0.1:11434/v1", apiKey: undefined, apiKeyEnv: undefined })
    const named = ok(ModelSpec.resolve({ model: "openai-compatible:m", baseUrl: "https://openrouter.ai/api/v1", apiKeyEnv: "OR_KEY" }, { OR_KEY: "k" }))!
    expect(Redacted.value(named.apiKey!)).toBe("k")
    expect(ok(ModelSpec.resolve({}, env))).toBeUndefined()
  })

  it("rejects what cannot work, saying what to do", () => {
    expect(err(ModelSpec.resolve({ model: "openai-compatible:qwen3:8b" }, {}))).toContain("needs --base-url")
    expect(err(ModelSpec.resolve({ model: "openai:gpt-4.1" }, {}))).toContain("needs an API key in OPENAI_API_KEY")
    expect(err(ModelSpec.resolve({ model: "openai:gpt-4.1", apiKeyEnv: "NOPE" }, {}))).toContain("--api-key-env NOPE: that environment variable is not set")
    expect(err(ModelSpec.resolve({ model: "openai:gpt-4.1", apiKeyEnv: "sk-proj-abc123" }, {}))).toContain("NAME of an environment variable")
    expect(err(ModelSpec.resolve({ model: "openai-compatible:m", baseUrl: "localhost:8080" }, {}))).toContain("http(s) URL")
    expect(err(ModelSpec.resolve({ model: "openai-compatible:m", baseUrl: "not a url" }, {}))).toContain("http(s) URL")
    expect(err(ModelSpec.resolve({ model: "openai-compatible:m", baseUrl: "http://u:p@h/v1" }, {}))).toContain("must not contain credentials")
    expect(err(ModelSpec.resolve({ baseUrl: "http://h/v1" }, {}))).toContain("need --model")
  })

  it("the command line: flags win over DSH_ACP_* variables, which work alone too", () => {
    const env = { DSH_ACP_MODEL: "openai-compatible:fake", DSH_ACP_BASE_URL: "http://127.0.0.1:1/v1", DSH_ACP_APPROVE_ALL: "1" }
    const fromEnv = ok(parseArgs([], env))
    expect(fromEnv).toMatchObject({ _tag: "Agent", options: { approveAll: true, model: { provider: "openai-compatible", model: "fake", baseUrl: "http://127.0.0.1:1/v1" } } })
    const fromFlags = ok(parseArgs(["--model", "openai-compatible:qwen3:8b", "--base-url=http://127.0.0.1:2/v1"], env))
    expect(fromFlags).toMatchObject({ options: { model: { model: "qwen3:8b", baseUrl: "http://127.0.0.1:2/v1" } } })
    expect(ok(parseArgs([], {}))).toMatchObject({ options: { model: undefined, approveAll: false } })
    expect(ok(parseArgs(["--approve-all", "--model", "anthropic:claude-sonnet-4-5"], { ANTHROPIC_API_KEY: "x" }))).toMatchObject({ options: { approveAll: true } })
    expect(err(parseArgs(["--model"], {}))).toContain("--model needs a value")
    expect(err(parseArgs(["--model", "llama"], {}))).toContain("--model must be <provider>:<model>")
    expect(err(parseArgs(["demo", "--model", "openai-compatible:x"], {}))).toContain("DSH_ACP_MODEL")
  })

  it("the idle timeout of a model request: a default, a flag over DSH_ACP_MODEL_IDLE_TIMEOUT_MS, 0 for none", () => {
    const env = { DSH_ACP_MODEL: "openai-compatible:fake", DSH_ACP_BASE_URL: "http://127.0.0.1:1/v1" }
    const idle = (argv: ReadonlyArray<string>, extra: Record<string, string> = {}) => {
      const command = ok(parseArgs(argv, { ...env, ...extra }))
      return command._tag === "Agent" ? command.options.model?.idleTimeoutMs : "not an agent"
    }
    expect(idle([])).toBe(ModelSpec.DEFAULT_IDLE_TIMEOUT_MS)
    expect(idle([], { DSH_ACP_MODEL_IDLE_TIMEOUT_MS: "45000" })).toBe(45_000)
    expect(idle(["--model-idle-timeout-ms", "2000"], { DSH_ACP_MODEL_IDLE_TIMEOUT_MS: "45000" })).toBe(2000)
    expect(idle(["--model-idle-timeout-ms=0"])).toBeUndefined()
    expect(err(parseArgs(["--model-idle-timeout-ms", "02"], env))).toContain("whole number of milliseconds")
    expect(err(parseArgs(["--model-idle-timeout-ms", "-5"], env))).toContain("whole number of milliseconds")
    expect(err(parseArgs(["--model-idle-timeout-ms", "1000"], {}))).toContain("need --model")
  })
})
