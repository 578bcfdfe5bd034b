/**
 * The command line of `dsh-acp`: parsed by hand because the surface is tiny and every module
 * loaded here delays Zed's first `initialize`.
 */
import * as Either from "effect/Either"
import * as ModelSpec from "./Model/ModelSpec.js"
import { enabledFromEnv } from "./Tools/Bash/ChangeSettings.js"

/** The sandbox profiles (kept equal to `Bash/Sandbox.ts` by the type; not imported, to keep the start light). */
export type SandboxProfile = "read-only" | "workspace" | "full"
const SANDBOX_PROFILES: ReadonlyArray<SandboxProfile> = ["read-only", "workspace", "full"]

/** Kept equal to package.json's version by a test (reading package.json would cost start-up time). */
export const VERSION = "0.1.0"

export type LogLevel = "none" | "error" | "warning" | "info" | "debug"

export interface AgentOptions {
  readonly timeoutMs: number | undefined
  readonly liveOutput: boolean
  readonly logLevel: LogLevel
  /** The model to drive the session with; `undefined`: the shell harness (prompts are scripts). */
  readonly model: ModelSpec.ModelSpec | undefined
  /** With a model: run its commands without asking the user first. */
  readonly approveAll: boolean
  /** Show the files a command changed (in a git work tree) on its card. */
  readonly diffs: boolean
  /** The sandbox profile sessions start in (`--sandbox`, `DSH_ACP_SANDBOX`); `undefined`: full. */
  readonly sandbox: SandboxProfile | undefined
  /** The workspace profile may reach the network. */
  readonly allowNetwork: boolean
  /** Keep sessions on disk (list, load, resume); `false`: in memory only. */
  readonly persist: boolean
}

export type Command =
  | { readonly _tag: "Agent"; readonly options: AgentOptions }
  | { readonly _tag: "Demo"; readonly script: string | undefined; readonly fallback: boolean; readonly options: AgentOptions }
  | { readonly _tag: "Help" }
  | { readonly _tag: "Version" }

export const HELP = `dsh-acp ${VERSION} — agent-side bash for ACP editors, shown as live terminal cards

Usage:
  dsh-acp [options]               serve the Agent Client Protocol on stdin/stdout (what Zed launches)
  dsh-acp demo [script] [options] run the agent as a child and draw its cards here, as Zed would
  dsh-acp --help | --version

Options:
  --timeout-ms <n>     default timeout of a foreground command (default 120000, at most 600000)
  --no-live-output     send a command's output when it ends instead of while it runs
  --no-diffs           do not show the files a command changed (env DSH_ACP_DIFFS=0); shown by
                       default when the command runs in a git work tree
  --no-persist         keep sessions in memory only (env DSH_ACP_PERSIST=0); by default each session
                       is kept in $XDG_STATE_HOME/dsh-acp/sessions (~/.local/state/dsh-acp/sessions)
                       so the editor can list, reopen and resume it after a restart
  --log-level <level>  none | error | warning | info | debug (default: warning); logs go to stderr
  --fallback           (demo) act as a client without terminal cards: the \`\`\`console text fallback

Sandbox (needs a working bwrap; each session can switch mode in the editor):
  --sandbox <profile>  the profile sessions start in (env DSH_ACP_SANDBOX; default full):
                       read-only  nothing writable, a private /tmp, no network;
                       workspace  only the project (and additional directories) writable,
                                  a private /tmp, no network;
                       full       no sandbox (a pid namespace only)
  --allow-network      let the workspace profile reach the network (env DSH_ACP_ALLOW_NETWORK=1)

Model (without --model, prompts are bash scripts run in the session's directory; /bg <script>,
/jobs and /kill <id> manage background tasks):
  --model <provider>:<model>  let a model run the commands: openai:gpt-4.1,
                       anthropic:claude-sonnet-4-5, openai-compatible:qwen3:8b (env DSH_ACP_MODEL)
  --base-url <url>     the provider's API root (env DSH_ACP_BASE_URL); defaults:
                       https://api.openai.com/v1, https://api.anthropic.com; required for
                       openai-compatible, e.g. http://127.0.0.1:11434/v1 (Ollama)
  --api-key-env <NAME> the environment variable holding the key (env DSH_ACP_API_KEY_ENV);
                       defaults: OPENAI_API_KEY, ANTHROPIC_API_KEY; none for openai-compatible
  --approve-all        run the model's commands without asking first (env DSH_ACP_APPROVE_ALL=1)
  --model-idle-timeout-ms <n>  abandon a model request that receives no byte for this long, with
                       an error message in the panel (env DSH_ACP_MODEL_IDLE_TIMEOUT_MS; default
                       300000: a reasoning model may think for minutes before its first byte;
                       0: never); the session stays usable

In Zed, put these in "agent_servers": { "DSH": { "command": "dsh-acp", "args": [...], "env": {...} } }.`

const LOG_LEVELS: ReadonlyArray<LogLevel> = ["none", "error", "warning", "info", "debug"]

export const parseArgs = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>> = process.env
): Either.Either<Command, string> => {
  let timeoutMs: number | undefined
  const model: { model?: string; baseUrl?: string; apiKeyEnv?: string; idleTimeoutMs?: string } = {}
  let approveAll = env["DSH_ACP_APPROVE_ALL"] === "1" || env["DSH_ACP_APPROVE_ALL"] === "true"
  let allowNetwork = env["DSH_ACP_ALLOW_NETWORK"] === "1" || env["DSH_ACP_ALLOW_NETWORK"] === "true"
  const sandboxEnv = env["DSH_ACP_SANDBOX"]
  if (sandboxEnv !== undefined && sandboxEnv !== "" && !SANDBOX_PROFILES.includes(sandboxEnv as SandboxProfile)) {
    return Either.left(`DSH_ACP_SANDBOX must be one of ${SANDBOX_PROFILES.join(", ")}, got ${sandboxEnv}`)
  }
  let sandbox = sandboxEnv === undefined || sandboxEnv === "" ? undefined : sandboxEnv as SandboxProfile
  let liveOutput = true
  let diffs = enabledFromEnv(env)
  let persist = !["0", "false", "off", "no"].includes(env["DSH_ACP_PERSIST"]?.trim().toLowerCase() ?? "")
  let logLevel: LogLevel = "warning"
  let fallback = false
  const positional: Array<string> = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined]
    const value = () => inline ?? argv[++i]
    switch (flag) {
      case "-h":
      case "--help":
        return Either.right({ _tag: "Help" })
      case "-V":
      case "--version":
        return Either.right({ _tag: "Version" })
      case "--timeout-ms": {
        const raw = value()
        if (raw === undefined || !/^[1-9][0-9]*$/.test(raw)) return Either.left(`--timeout-ms needs a positive whole number of milliseconds, got ${raw ?? "nothing"}`)
        timeoutMs = Math.min(Number(raw), 600_000)
        break
      }
      case "--no-live-output":
        liveOutput = false
        break
      case "--no-diffs":
        diffs = false
        break
      case "--no-persist":
        persist = false
        break
      case "--log-level": {
        const raw = value()
        if (!LOG_LEVELS.includes(raw as LogLevel)) return Either.left(`--log-level must be one of ${LOG_LEVELS.join(", ")}, got ${raw ?? "nothing"}`)
        logLevel = raw as LogLevel
        break
      }
      case "--fallback":
        fallback = true
        break
      case "--model":
      case "--base-url":
      case "--api-key-env":
      case "--model-idle-timeout-ms": {
        const raw = value()
        if (raw === undefined || raw === "") return Either.left(`${flag} needs a value (see --help)`)
        model[flag === "--model" ? "model" : flag === "--base-url" ? "baseUrl" : flag === "--api-key-env" ? "apiKeyEnv" : "idleTimeoutMs"] = raw
        break
      }
      case "--approve-all":
        approveAll = true
        break
      case "--sandbox": {
        const raw = value()
        if (!SANDBOX_PROFILES.includes(raw as SandboxProfile)) return Either.left(`--sandbox must be one of ${SANDBOX_PROFILES.join(", ")}, got ${raw ?? "nothing"}`)
        sandbox = raw as SandboxProfile
        break
      }
      case "--allow-network":
        allowNetwork = true
        break
      default:
        if (arg.startsWith("-")) return Either.left(`unknown option ${arg} (see --help)`)
        positional.push(arg)
    }
  }
  if (positional[0] === "demo" && Object.keys(model).length > 0) {
    return Either.left("the demo takes its model from DSH_ACP_MODEL, DSH_ACP_BASE_URL and DSH_ACP_API_KEY_ENV, not from options")
  }
  const spec = ModelSpec.resolve(ModelSpec.mergeSettings(model, ModelSpec.settingsFromEnv(env)), env)
  if (Either.isLeft(spec)) return Either.left(spec.left)
  const options: AgentOptions = { timeoutMs, liveOutput, logLevel, model: spec.right, approveAll, diffs, sandbox, allowNetwork, persist }
  if (positional[0] === "demo") {
    return Either.right({ _tag: "Demo", script: positional.length > 1 ? positional.slice(1).join(" ") : undefined, fallback, options })
  }
  if (positional.length > 0) return Either.left(`unexpected argument ${positional[0]} (see --help)`)
  if (fallback) return Either.left("--fallback only applies to `dsh-acp demo`")
  return Either.right({ _tag: "Agent", options })
}
