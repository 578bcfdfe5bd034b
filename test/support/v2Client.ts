/**
 * A raw-line ACP v2 client for end-to-end tests, over the real agent process (`agentProcess.ts`).
 * Raw lines rather than the SDK's `./experimental/v2` client: the test then sees (and validates)
 * exactly what went over the wire, including what an SDK would drop or reshape.
 *
 * `violations()` checks EVERY stdout line against the official v2 JSON Schema: requests and
 * notifications by method, responses by the method of the request they answer, errors as `Error`.
 */
import { type AgentProcess, type Json, parseOrUndefined } from "./agentProcess.js"
import { validateAcpV2 } from "./acpSchema.js"

const RESPONSE_DEFS: Record<string, string> = {
  initialize: "InitializeResponse",
  "session/new": "NewSessionResponse",
  "session/prompt": "PromptResponse",
  "session/close": "CloseSessionResponse",
  "terminal/cancel": "CancelTerminalResponse",
  "tool_call/cancel": "CancelToolCallResponse"
}

const OUTGOING_DEFS: Record<string, string> = {
  "session/update": "UpdateSessionNotification",
  "session/request_permission": "RequestPermissionRequest"
}

export interface V2Client {
  readonly agent: AgentProcess
  /** Sends a request and resolves with the whole response message (`result` or `error`). */
  readonly request: (method: string, params: Json) => Promise<Json>
  readonly notify: (method: string, params: Json) => void
  readonly newSession: (cwd: string) => Promise<string>
  /** Sends a prompt; resolves with its acknowledgement once the turn's idle `state_update` arrived. */
  readonly prompt: (sessionId: string, text: string) => Promise<{ readonly ack: Json; readonly stopReason: string }>
  /** Every `session/update` params object of `sessionId` so far, in order. */
  readonly updates: (sessionId: string) => Array<Json>
  /** Resolves with the first `session/update` params of `sessionId` matching `predicate`, past or future. */
  readonly waitForUpdate: (sessionId: string, predicate: (update: Json) => boolean, timeoutMs?: number) => Promise<Json>
  /** Every stdout line that is not a valid v2 message, with the reasons. */
  readonly violations: () => Array<string>
}

export const connectV2 = async (agent: AgentProcess): Promise<V2Client> => {
  let nextId = 1
  const sent = new Map<number, string>()
  const request = async (method: string, params: Json) => {
    const id = nextId++
    sent.set(id, method)
    agent.writeLine(JSON.stringify({ jsonrpc: "2.0", id, method, params }))
    return agent.response(id, 20_000)
  }
  const notify = (method: string, params: Json) => agent.writeLine(JSON.stringify({ jsonrpc: "2.0", method, params }))
  const messages = () => agent.stdoutLines.map(parseOrUndefined).filter((m) => m !== undefined)
  const updates = (sessionId: string) =>
    messages().filter((m) => m.method === "session/update" && m.params?.sessionId === sessionId).map((m) => m.params)
  const waitForUpdate = (sessionId: string, predicate: (update: Json) => boolean, timeoutMs = 20_000) =>
    agent.waitForMessage((m) => m.method === "session/update" && m.params?.sessionId === sessionId && predicate(m.params.update), timeoutMs)
      .then((m) => m.params)

  const init = await request("initialize", { protocolVersion: 2, info: { name: "v2-test-client", version: "1.0.0" }, capabilities: {} })
  if (init.result?.protocolVersion !== 2) throw new Error(`agent did not negotiate v2: ${JSON.stringify(init)}`)

  const ended = (sessionId: string) => updates(sessionId).filter((p) => p.update.sessionUpdate === "state_update" && p.update.state === "idle" && typeof p.update.stopReason === "string")

  return {
    agent,
    request,
    notify,
    newSession: async (cwd) => {
      const response = await request("session/new", { cwd, mcpServers: [] })
      if (response.result?.sessionId === undefined) throw new Error(`session/new failed: ${JSON.stringify(response)}`)
      return response.result.sessionId
    },
    prompt: async (sessionId, text) => {
      const before = ended(sessionId).length
      const ack = await request("session/prompt", { sessionId, prompt: [{ type: "text", text }] })
      if (ack.error !== undefined) throw new Error(`session/prompt failed: ${JSON.stringify(ack)}`)
      const deadline = Date.now() + 60_000
      while (ended(sessionId).length <= before) {
        if (Date.now() > deadline) throw new Error(`turn did not end; stderr:\n${agent.stderrLines.slice(-20).join("\n")}`)
        await new Promise((r) => setTimeout(r, 20))
      }
      return { ack, stopReason: ended(sessionId)[before]!.update.stopReason }
    },
    updates,
    waitForUpdate,
    violations: () => {
      const problems: Array<string> = []
      for (const line of agent.stdoutLines) {
        const m = parseOrUndefined(line)
        const where = line.length > 300 ? `${line.slice(0, 300)}…` : line
        if (m === undefined || m.jsonrpc !== "2.0") {
          problems.push(`not a JSON-RPC line: ${where}`)
          continue
        }
        let errors: ReadonlyArray<string>
        if (typeof m.method === "string") {
          const def = OUTGOING_DEFS[m.method]
          errors = def === undefined ? [`unexpected method ${m.method}`] : validateAcpV2(def, m.params)
        } else if ("error" in m) {
          errors = validateAcpV2("Error", m.error)
        } else {
          const method = typeof m.id === "number" ? sent.get(m.id) : undefined
          const def = method === undefined ? undefined : RESPONSE_DEFS[method]
          errors = def === undefined ? [`response to an unknown request ${JSON.stringify(m.id)}`] : validateAcpV2(def, m.result)
        }
        for (const e of errors) problems.push(`${e} in ${where}`)
      }
      return problems
    }
  }
}
