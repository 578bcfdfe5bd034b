/**
 * Helpers for the hygiene suites: the real agent (`node dist/bin.js`, via the e2e helper) started
 * with a given containment mode and environment, raw JSON-RPC calls, and a /proc walk that finds
 * every process a command started by a unique token in its argv (`sleep 100.<token>`).
 */
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bwrapProblem } from "../bash/helpers.js"
import { type AgentProcess, type Json, spawnAgent } from "../support/agentProcess.js"

export type Mode = "process-group" | "bwrap"

export { bwrapProblem }

export const modes: ReadonlyArray<{ readonly mode: Mode; readonly skip: string | undefined }> = [
  { mode: "process-group", skip: undefined },
  { mode: "bwrap", skip: bwrapProblem }
]

/** Spawns the agent with `DSH_ACP_CONTAINMENT=mode` and `env` added to its environment (spawn copies it synchronously). */
export const startAgent = (mode: Mode, args: ReadonlyArray<string> = [], env: Record<string, string> = {}): AgentProcess => {
  const saved = { ...process.env }
  Object.assign(process.env, { DSH_ACP_CONTAINMENT: mode, ...env })
  try {
    return spawnAgent(["--log-level", "info", ...args])
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
    Object.assign(process.env, saved)
  }
}

/** Raw JSON-RPC calls with fresh ids. */
export const rpc = (agent: AgentProcess) => {
  let id = 0
  const call = (method: string, params: unknown, timeoutMs?: number): Promise<Json> => {
    const n = `t-${++id}`
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id: n, method, params }))
    return agent.response(n, timeoutMs)
  }
  const notify = (method: string, params: unknown) => agent.writeLine(JSON.stringify({ jsonrpc: "2.0", method, params }))
  return {
    call,
    notify,
    initialize: () => call("initialize", { protocolVersion: 1, clientCapabilities: { _meta: { terminal_output: true } } }),
    newSession: async (cwd: string): Promise<string> => (await call("session/new", { cwd, mcpServers: [] })).result.sessionId,
    prompt: (sessionId: string, text: string, timeoutMs?: number) =>
      call("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, timeoutMs)
  }
}

let counter = 0
/** Digits unique to this run: `sleep 100.<token>` is a valid sleep and findable in /proc. */
export const token = (): string => `${process.pid}${++counter}${Math.floor(Math.random() * 1e6)}`

/** Live (non-zombie) processes with `tok` in their argv, whatever their group or namespace. */
export const livingWith = (tok: string): Array<string> =>
  readdirSync("/proc").filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid).flatMap((pid) => {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "latin1")
      if (!cmdline.includes(tok)) return []
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
      return state === "Z" || state === "X" ? [] : [`${pid} ${cmdline.replaceAll("\0", " ").trim()}`]
    } catch {
      return []
    }
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The live `sleep 100.<tok>` processes. */
export const sleepers = (tok: string): Array<string> => livingWith(tok).filter((p) => p.split(" ")[1] === "sleep")

/** Waits until `count` (default 1) `sleep …<tok>` processes run. */
export const running = async (tok: string, count = 1, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (sleepers(tok).length < count) {
    if (Date.now() > deadline) throw new Error(`fewer than ${count} sleeps with ${tok} started: ${livingWith(tok).join("; ")}`)
    await sleep(20)
  }
}

/** Waits until nothing with `tok` is alive; returns the survivors when `timeoutMs` passes. */
export const gone = async (tok: string, timeoutMs = 5_000): Promise<Array<string>> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const left = livingWith(tok)
    if (left.length === 0 || Date.now() > deadline) return left
    await sleep(20)
  }
}

/** Kills whatever carries `tok` (cleanup after a test that expects survivors, or failed). */
export const killAll = (tok: string) => {
  for (const line of livingWith(tok)) {
    try {
      process.kill(Number(line.split(" ")[0]), "SIGKILL")
    } catch {
      // already gone
    }
  }
}

export const withDir = async <A>(run: (dir: string) => Promise<A>): Promise<A> => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-hygiene-")))
  try {
    return await run(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
