/**
 * The real `dsh-acp` command (`node dist/bin.js`, built by `npm run build`) as a child process with
 * piped stdio (`stdioProcess.ts`), the official ACP SDK client connected to it, and the checks of
 * what it wrote: the schema and purity of every line (`protocolViolations`), the cards a client
 * rebuilds (`cardsOf`), the agent's text.
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
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { validateAcp } from "./acpSchema.js"
import { type AgentProcess, type Json, parseOrUndefined, spawnStdio } from "./stdioProcess.js"

export * from "./procfs.js"
export { type AgentProcess, type Json, lineSplitter, parseOrUndefined } from "./stdioProcess.js"

export const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url))

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
  return options.launcher === undefined
    ? spawnStdio(process.execPath, [BIN, ...args], { env })
    : spawnStdio(options.launcher, args, { env })
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
  /** Every permission request the client answered (none unless `decide` was given). */
  readonly permissions: ReadonlyArray<acp.RequestPermissionRequest>
  readonly cancel: (sessionId: string) => Promise<void>
}

/** How a client answers `session/request_permission`. */
export type Decide = (request: acp.RequestPermissionRequest) => "allow_once" | "allow_always" | "reject"

export interface ConnectOptions {
  /** Answers permission requests; without it the client has no handler for them (the SDK answers -32601). */
  readonly decide?: Decide
  /** The client's name in `initialize`. */
  readonly name?: string
}

/** Connects the official SDK client to the agent's stdio and sends `initialize`. */
export const connectClient = async (
  agent: AgentProcess,
  clientCapabilities: acp.ClientCapabilities,
  options: ConnectOptions = {}
): Promise<Client> => {
  const name = options.name ?? "dsh-acp-e2e"
  const updates: Array<acp.SessionNotification> = []
  const permissions: Array<acp.RequestPermissionRequest> = []
  const waiters = new Set<(n: acp.SessionNotification) => void>()
  const listening = acp.client({ name }).onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params)
    for (const w of [...waiters]) w(params)
  })
  const { decide } = options
  const app = decide === undefined ? listening : listening.onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params)
    return { outcome: { outcome: "selected", optionId: decide(params) } }
  })
  const connection = app.connect(agent.sdkStream())
  const initializeResponse = await connection.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities,
    clientInfo: { name, version: "0.0.0" }
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
    permissions,
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
    },
    cancel: (sessionId) => connection.agent.notify(acp.methods.agent.session.cancel, { sessionId })
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
