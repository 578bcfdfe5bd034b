/**
 * The real `dsh-acp` command (`node dist/bin.js`, built by `npm run build`) as a child process with
 * piped stdio, for end-to-end tests. Every raw stdout line, every line written to its stdin and
 * every stderr line is recorded, so a test can check the wire itself (schema, purity, counts) next
 * to what the official ACP SDK client made of it.
 *
 * ```ts
 * const agent = spawnAgent()
 * const client = await connectClient(agent, { _meta: { terminal_output: true } })
 * const sessionId = await client.newSession(dir)
 * const { response, updates } = await client.prompt(sessionId, "echo hi")
 * expect(protocolViolations(agent, client)).toEqual([])
 * await agent.stop()
 * ```
 */
import * as acp from "@agentclientprotocol/sdk"
import { spawn } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { validateAcp } from "./acpSchema.js"

export const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url))

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any

export interface AgentProcess {
  readonly pid: number
  /** Every line the agent wrote to stdout, exactly as written (without the newline). */
  readonly stdoutLines: ReadonlyArray<string>
  /** Every line the agent wrote to stderr. */
  readonly stderrLines: ReadonlyArray<string>
  /** Every line written to the agent's stdin (by the SDK or by `writeLine`). */
  readonly stdinLines: ReadonlyArray<string>
  /** Writes one raw line (a newline is appended). */
  readonly writeLine: (line: string) => void
  /** Ends the agent's stdin (EOF). */
  readonly endStdin: () => void
  /** Resolves with the first stdout message (parsed) matching `predicate`, past or future. */
  readonly waitForMessage: (predicate: (message: Json) => boolean, timeoutMs?: number) => Promise<Json>
  /** The response to request `id` (raw mode). */
  readonly response: (id: number | string, timeoutMs?: number) => Promise<Json>
  /** The agent's stdio as an ACP stream for the SDK; at most once per process. */
  readonly sdkStream: () => acp.Stream
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly signal: (signal: NodeJS.Signals) => void
  /** Ends stdin and waits for the exit; SIGKILLs the process if it does not exit in `timeoutMs`. */
  readonly stop: (timeoutMs?: number) => Promise<void>
}

/** Splits a byte stream into UTF-8 lines (a last line without its newline comes at `end`). */
export const lineSplitter = (onLine: (line: string) => void) => {
  const decoder = new TextDecoder()
  let buffer = ""
  return {
    push: (chunk: Uint8Array) => {
      buffer += decoder.decode(chunk, { stream: true })
      let nl: number
      while ((nl = buffer.indexOf("\n")) >= 0) {
        onLine(buffer.slice(0, nl))
        buffer = buffer.slice(nl + 1)
      }
    },
    end: () => {
      buffer += decoder.decode()
      if (buffer !== "") onLine(buffer)
      buffer = ""
    }
  }
}

export const parseOrUndefined = (line: string): Json => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

/** The snapshot launcher (`dist/dsh-acp`, a shell script), built next to BIN. */
export const LAUNCHER = fileURLToPath(new URL("../../dist/dsh-acp", import.meta.url))

/**
 * `node dist/bin.js ARGS`, or with `launcher` that executable (`LAUNCHER`) with ARGS. `env` is
 * added to this process's; a variable set to `undefined` there is removed.
 */
export const spawnAgent = (
  args: ReadonlyArray<string> = [],
  env: Readonly<Record<string, string | undefined>> = {},
  options: { readonly launcher?: string } = {}
): AgentProcess => {
  const file = options.launcher ?? BIN
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first (npm test does)`)
  const [command, argv] = options.launcher === undefined ? [process.execPath, [BIN, ...args]] : [options.launcher, [...args]]
  const fullEnv = Object.fromEntries(Object.entries({ ...process.env, ...env }).filter(([, v]) => v !== undefined))
  const child = spawn(command, argv, { stdio: ["pipe", "pipe", "pipe"], env: fullEnv })
  const stdoutLines: Array<string> = []
  const stderrLines: Array<string> = []
  const stdinLines: Array<string> = []
  const waiters = new Set<(message: Json) => void>()

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal }))
  )

  let sdkController: ReadableStreamDefaultController<Uint8Array> | undefined
  const stdout = lineSplitter((line) => {
    stdoutLines.push(line)
    const message = parseOrUndefined(line)
    if (message !== undefined) for (const w of [...waiters]) w(message)
  })
  child.stdout.on("data", (chunk: Buffer) => {
    stdout.push(chunk)
    sdkController?.enqueue(new Uint8Array(chunk))
  })
  child.stdout.on("end", () => {
    stdout.end()
    try {
      sdkController?.close()
    } catch {
      // already closed by the SDK
    }
  })
  const stderr = lineSplitter((line) => stderrLines.push(line))
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk))
  child.stderr.on("end", () => stderr.end())

  const stdin = lineSplitter((line) => stdinLines.push(line))
  // A write after the agent exited would otherwise crash the test worker with EPIPE.
  child.stdin.on("error", () => {})
  const write = (bytes: Uint8Array) => {
    stdin.push(bytes)
    if (!child.stdin.destroyed && child.stdin.writable) child.stdin.write(bytes)
  }

  const waitForMessage = (predicate: (message: Json) => boolean, timeoutMs = 10_000) =>
    new Promise<Json>((resolve, reject) => {
      for (const line of stdoutLines) {
        const message = parseOrUndefined(line)
        if (message !== undefined && predicate(message)) return resolve(message)
      }
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(new Error(`no matching stdout message within ${timeoutMs} ms; stdout:\n${stdoutLines.slice(-20).join("\n")}\nstderr:\n${stderrLines.slice(-20).join("\n")}`))
      }, timeoutMs)
      const waiter = (message: Json) => {
        if (!predicate(message)) return
        clearTimeout(timer)
        waiters.delete(waiter)
        resolve(message)
      }
      waiters.add(waiter)
    })

  let streamTaken = false
  const sdkStream = (): acp.Stream => {
    if (streamTaken) throw new Error("sdkStream() may be called once per agent process")
    streamTaken = true
    const input = new ReadableStream<Uint8Array>({ start: (controller) => void (sdkController = controller) })
    const output = new WritableStream<Uint8Array>({
      write: (chunk) => write(chunk),
      close: () => void child.stdin.end()
    })
    return acp.ndJsonStream(output, input)
  }

  const stop = async (timeoutMs = 5_000) => {
    child.stdin.end()
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    await exited
    clearTimeout(timer)
  }

  return {
    pid: child.pid!,
    stdoutLines,
    stderrLines,
    stdinLines,
    writeLine: (line) => write(new TextEncoder().encode(`${line}\n`)),
    endStdin: () => void child.stdin.end(),
    waitForMessage,
    response: (id, timeoutMs) => waitForMessage((m) => m.id === id && m.method === undefined, timeoutMs),
    sdkStream,
    exited,
    signal: (signal) => void child.kill(signal),
    stop
  }
}

/** What the SDK client saw: its connection, and every `session/update` its handler received. */
export interface Client {
  readonly agent: acp.ClientContext
  readonly connection: acp.ClientConnection
  readonly initializeResponse: acp.InitializeResponse
  /** Every notification the SDK's `session/update` handler received, in order. */
  readonly updates: ReadonlyArray<acp.SessionNotification>
  readonly waitForUpdate: (
    predicate: (n: acp.SessionNotification) => boolean,
    timeoutMs?: number
  ) => Promise<acp.SessionNotification>
  readonly newSession: (cwd: string) => Promise<string>
  /** Sends one prompt; `updates` are this session's updates received while it ran. */
  readonly prompt: (
    sessionId: string,
    prompt: string | Array<acp.ContentBlock>
  ) => Promise<{ readonly response: acp.PromptResponse; readonly updates: ReadonlyArray<acp.SessionUpdate> }>
}

/** Connects the official SDK client to the agent's stdio and sends `initialize`. */
export const connectClient = async (
  agent: AgentProcess,
  clientCapabilities: acp.ClientCapabilities
): Promise<Client> => {
  const updates: Array<acp.SessionNotification> = []
  const waiters = new Set<(n: acp.SessionNotification) => void>()
  const app = acp.client({ name: "dsh-acp e2e" }).onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params)
    for (const w of [...waiters]) w(params)
  })
  const connection = app.connect(agent.sdkStream())
  const initializeResponse = await connection.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities,
    clientInfo: { name: "dsh-acp-e2e", version: "0.0.0" }
  })

  const waitForUpdate = (predicate: (n: acp.SessionNotification) => boolean, timeoutMs = 10_000) =>
    new Promise<acp.SessionNotification>((resolve, reject) => {
      const found = updates.find(predicate)
      if (found !== undefined) return resolve(found)
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(new Error(`no matching session/update within ${timeoutMs} ms; last updates:\n${updates.slice(-10).map((u) => JSON.stringify(u)).join("\n")}`))
      }, timeoutMs)
      const waiter = (n: acp.SessionNotification) => {
        if (!predicate(n)) return
        clearTimeout(timer)
        waiters.delete(waiter)
        resolve(n)
      }
      waiters.add(waiter)
    })

  return {
    agent: connection.agent,
    connection,
    initializeResponse,
    updates,
    waitForUpdate,
    newSession: async (cwd) => (await connection.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })).sessionId,
    prompt: async (sessionId, prompt) => {
      const from = updates.length
      const response = await connection.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt
      })
      return {
        response,
        updates: updates.slice(from).filter((n) => n.sessionId === sessionId).map((n) => n.update)
      }
    }
  }
}

const responseDefinitions: Record<string, string> = {
  "initialize": "InitializeResponse",
  "authenticate": "AuthenticateResponse",
  "session/new": "NewSessionResponse",
  "session/prompt": "PromptResponse",
  "session/close": "CloseSessionResponse",
  "session/set_mode": "SetSessionModeResponse",
  "session/set_config_option": "SetSessionConfigOptionResponse",
  "session/load": "LoadSessionResponse",
  "session/resume": "ResumeSessionResponse",
  "session/list": "ListSessionsResponse",
  "session/delete": "DeleteSessionResponse"
}

const requestDefinitions: Record<string, string> = {
  "session/request_permission": "RequestPermissionRequest"
}

/**
 * Every problem with what the agent wrote, one line each; `[]` when all is well:
 * - each stdout line is one JSON-RPC 2.0 object valid against the schema's top-level agent-side
 *   union (request | response | notification) — and, since that union admits any extension
 *   message, also against the specific definition (`SessionNotification` for `session/update`,
 *   the response type of the method the request with that id called);
 * - when `client` is given: the SDK's handler received exactly as many `session/update`s as
 *   there are raw `session/update` lines (none dropped by the SDK's own validation).
 */
export const protocolViolations = (
  agent: Pick<AgentProcess, "stdoutLines" | "stdinLines">,
  client?: Pick<Client, "updates">
): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const methodsById = new Map<string, string>()
  for (const line of agent.stdinLines) {
    const sent = parseOrUndefined(line)
    if (sent !== undefined && sent.id !== undefined && typeof sent.method === "string") methodsById.set(JSON.stringify(sent.id), sent.method)
  }
  let rawUpdates = 0
  agent.stdoutLines.forEach((line, index) => {
    const where = `stdout line ${index + 1} ${line.slice(0, 300)}`
    const message = parseOrUndefined(line)
    if (message === undefined || typeof message !== "object" || message === null || Array.isArray(message)) {
      return problems.push(`${where}: not a JSON object`)
    }
    if (message.jsonrpc !== "2.0") problems.push(`${where}: jsonrpc is not "2.0"`)
    const isRequest = typeof message.method === "string" && "id" in message
    const isNotification = typeof message.method === "string" && !("id" in message)
    const isResponse = !("method" in message) && "id" in message && ("result" in message) !== ("error" in message)
    const check = (definition: string, value: unknown) => {
      for (const e of validateAcp(definition, value)) problems.push(`${where}: ${definition}: ${e}`)
    }
    if (isRequest) {
      check("AgentRequest", message)
      const definition = requestDefinitions[message.method]
      if (definition === undefined) problems.push(`${where}: unexpected request ${message.method}`)
      else check(definition, message.params)
    } else if (isNotification) {
      check("AgentNotification", message)
      if (message.method === "session/update") {
        rawUpdates++
        check("SessionNotification", message.params)
      } else {
        problems.push(`${where}: unexpected notification ${message.method}`)
      }
    } else if (isResponse) {
      check("AgentResponse", message)
      if ("result" in message) {
        const method = methodsById.get(JSON.stringify(message.id))
        const definition = method === undefined ? undefined : responseDefinitions[method]
        if (definition === undefined) problems.push(`${where}: a result for an unknown request (${method ?? "no such id"})`)
        else check(definition, message.result)
      } else if (!Number.isInteger(message.error?.code) || typeof message.error?.message !== "string") {
        problems.push(`${where}: malformed error object`)
      }
    } else {
      problems.push(`${where}: neither a request, a notification nor a response`)
    }
  })
  if (client !== undefined && client.updates.length !== rawUpdates) {
    problems.push(`the SDK handler received ${client.updates.length} session/update notifications, the agent wrote ${rawUpdates}`)
  }
  return problems
}

/** One tool call as a client reconstructs it from its `session/update`s. */
export interface Card {
  readonly toolCallId: string
  readonly start: Json
  /** Every `tool_call_update` of this id, in order. */
  readonly updates: Array<Json>
  /** The update that set a final status (`completed` / `failed`), if any. */
  final: Json | undefined
  /** The concatenated `_meta.terminal_output.data`. */
  output: string
}

export const cardsOf = (updates: ReadonlyArray<Json>): Array<Card> => {
  const cards = new Map<string, Card>()
  for (const raw of updates) {
    const u = raw.update ?? raw
    if (u.sessionUpdate === "tool_call") {
      cards.set(u.toolCallId, { toolCallId: u.toolCallId, start: u, updates: [], final: undefined, output: "" })
    } else if (u.sessionUpdate === "tool_call_update") {
      const card = cards.get(u.toolCallId)
      if (card === undefined) throw new Error(`tool_call_update for unknown call ${u.toolCallId}`)
      card.updates.push(u)
      if (typeof u._meta?.terminal_output?.data === "string") card.output += u._meta.terminal_output.data
      if (u.status === "completed" || u.status === "failed") card.final = u
    }
  }
  return [...cards.values()]
}

/** The text of all `agent_message_chunk`s. */
export const agentText = (updates: ReadonlyArray<Json>): string =>
  updates
    .map((raw) => raw.update ?? raw)
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("")

/** Live (non-zombie) processes whose process group is `pgid`, from /proc. */
export const processesInGroup = (pgid: number): Array<{ pid: number; cmdline: string }> => {
  const found: Array<{ pid: number; cmdline: string }> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      // The command name is parenthesised and may contain spaces: the fields start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      if (Number(fields[2]) !== pgid || fields[0] === "Z" || fields[0] === "X") continue
      found.push({ pid: Number(entry), cmdline: readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").trim() })
    } catch {
      // the process ended while we looked
    }
  }
  return found
}

/** Live processes whose command line is exactly `cmdline` (argv joined by spaces), with their group. */
export const processesByCmdline = (cmdline: string): Array<{ pid: number; pgid: number }> => {
  const found: Array<{ pid: number; pgid: number }> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").trim() !== cmdline) continue
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      if (fields[0] === "Z" || fields[0] === "X") continue
      found.push({ pid: Number(entry), pgid: Number(fields[2]) })
    } catch {
      // the process ended while we looked
    }
  }
  return found
}

/** Polls `check` every 20 ms until it returns a value other than `undefined`, or fails after `timeoutMs`. */
export const eventually = async <A>(what: string, check: () => A | undefined, timeoutMs = 10_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * A `sleep` of 100-odd seconds whose command line is unique to this test worker and `n`, so
 * `groupOf` finds this test's command and never another's (suites may run side by side).
 */
export const uniqueSleep = (n: number): string => `sleep 100.${process.pid}${String(n).padStart(3, "0")}`

/** Waits until a process runs `cmdline` and returns its process group (the command's bash). */
export const groupOf = (cmdline: string, timeoutMs?: number): Promise<number> =>
  eventually(`a process running \`${cmdline}\``, () => processesByCmdline(cmdline)[0]?.pgid, timeoutMs)

/** Waits until no process is left in group `pgid`; returns the survivors when it times out. */
export const groupGone = async (pgid: number, timeoutMs = 5_000): Promise<ReadonlyArray<string>> => {
  try {
    await eventually(`group ${pgid} to end`, () => (processesInGroup(pgid).length === 0 ? true : undefined), timeoutMs)
    return []
  } catch {
    return processesInGroup(pgid).map((p) => `${p.pid} ${p.cmdline}`)
  }
}
