/**
 * Any stdio agent script (an example under `examples/`, run as `node --import tsx <script>`) as a
 * child process, driven by the official ACP SDK client. It fills the `AgentProcess` and `Client`
 * shapes of `agentProcess.ts` (whose `spawnAgent` is bound to `dist/bin.js`), so that file's
 * `protocolViolations`, `cardsOf` and `agentText` apply; unlike `connectClient`, this client also
 * answers `session/request_permission` and can send `session/cancel`.
 */
import * as acp from "@agentclientprotocol/sdk"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { type AgentProcess, type Client, type Json, lineSplitter as splitter, parseOrUndefined as parse } from "./agentProcess.js"

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))

export interface ExampleProcess extends AgentProcess {
  /** Every line in both directions, in order: `→ ` to the agent, `← ` from it. */
  readonly wire: ReadonlyArray<string>
}

/** Spawns `node --import tsx <script>` (relative to the repository root) with piped stdio. */
export const spawnExample = (script: string, env: Record<string, string> = {}): ExampleProcess => {
  const child = spawn(process.execPath, ["--import", "tsx", script], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } })
  const stdoutLines: Array<string> = []
  const stderrLines: Array<string> = []
  const stdinLines: Array<string> = []
  const wire: Array<string> = []
  const waiters = new Set<(message: Json) => void>()
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal }))
  )
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined
  const stdout = splitter((line) => {
    stdoutLines.push(line)
    wire.push(`← ${line}`)
    const message = parse(line)
    if (message !== undefined) for (const w of [...waiters]) w(message)
  })
  child.stdout.on("data", (chunk: Buffer) => {
    stdout.push(chunk)
    controller?.enqueue(new Uint8Array(chunk))
  })
  child.stdout.on("end", () => {
    stdout.end()
    try {
      controller?.close()
    } catch {
      // already closed
    }
  })
  const stderr = splitter((line) => stderrLines.push(line))
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk))
  child.stdin.on("error", () => {})
  const stdin = splitter((line) => {
    stdinLines.push(line)
    wire.push(`→ ${line}`)
  })
  const write = (bytes: Uint8Array) => {
    stdin.push(bytes)
    if (!child.stdin.destroyed && child.stdin.writable) child.stdin.write(bytes)
  }
  const waitForMessage = (predicate: (message: Json) => boolean, timeoutMs = 10_000) =>
    new Promise<Json>((resolve, reject) => {
      const seen = stdoutLines.map(parse).find((m) => m !== undefined && predicate(m))
      if (seen !== undefined) return resolve(seen)
      const waiter = (message: Json) => {
        if (!predicate(message)) return
        clearTimeout(timer)
        waiters.delete(waiter)
        resolve(message)
      }
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(new Error(`no matching message within ${timeoutMs} ms; stderr:\n${stderrLines.slice(-20).join("\n")}`))
      }, timeoutMs)
      waiters.add(waiter)
    })
  let taken = false
  return {
    pid: child.pid!,
    stdoutLines,
    stderrLines,
    stdinLines,
    wire,
    writeLine: (line) => write(new TextEncoder().encode(`${line}\n`)),
    endStdin: () => void child.stdin.end(),
    waitForMessage,
    response: (id, timeoutMs) => waitForMessage((m) => m.id === id && m.method === undefined, timeoutMs),
    sdkStream: () => {
      if (taken) throw new Error("sdkStream() may be called once per process")
      taken = true
      const input = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) })
      const output = new WritableStream<Uint8Array>({ write: (chunk) => write(chunk), close: () => void child.stdin.end() })
      return acp.ndJsonStream(output, input)
    },
    exited,
    signal: (signal) => void child.kill(signal),
    stop: async (timeoutMs = 5_000) => {
      child.stdin.end()
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
      await exited
      clearTimeout(timer)
    }
  }
}

export type Decide = (request: acp.RequestPermissionRequest) => "allow_once" | "allow_always" | "reject"

export interface ExampleClient extends Client {
  /** Every permission request the client answered. */
  readonly permissions: ReadonlyArray<acp.RequestPermissionRequest>
  readonly cancel: (sessionId: string) => Promise<void>
}

/** Connects the SDK client (answering permission requests with `decide`) and sends `initialize`. */
export const connectExample = async (
  agent: ExampleProcess,
  clientCapabilities: acp.ClientCapabilities,
  decide: Decide = () => "allow_once"
): Promise<ExampleClient> => {
  const updates: Array<acp.SessionNotification> = []
  const permissions: Array<acp.RequestPermissionRequest> = []
  const waiters = new Set<(n: acp.SessionNotification) => void>()
  const app = acp.client({ name: "dsh-acp examples" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params)
      for (const w of [...waiters]) w(params)
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      permissions.push(params)
      return { outcome: { outcome: "selected", optionId: decide(params) } }
    })
  const connection = app.connect(agent.sdkStream())
  const initializeResponse = await connection.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities,
    clientInfo: { name: "dsh-acp-examples", version: "0.0.0" }
  })
  const waitForUpdate = (predicate: (n: acp.SessionNotification) => boolean, timeoutMs = 10_000) =>
    new Promise<acp.SessionNotification>((resolve, reject) => {
      const found = updates.find(predicate)
      if (found !== undefined) return resolve(found)
      const waiter = (n: acp.SessionNotification) => {
        if (!predicate(n)) return
        clearTimeout(timer)
        waiters.delete(waiter)
        resolve(n)
      }
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(new Error(`no matching session/update within ${timeoutMs} ms`))
      }, timeoutMs)
      waiters.add(waiter)
    })
  return {
    agent: connection.agent,
    connection,
    initializeResponse,
    updates,
    permissions,
    waitForUpdate,
    newSession: async (cwd) => (await connection.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })).sessionId,
    prompt: async (sessionId, prompt) => {
      const from = updates.length
      const response = await connection.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt
      })
      return { response, updates: updates.slice(from).filter((n) => n.sessionId === sessionId).map((n) => n.update) }
    },
    cancel: (sessionId) => connection.agent.notify(acp.methods.agent.session.cancel, { sessionId })
  }
}
