/**
 * Replays ACP v2 `session/update` params the way a v2 client must consume them (the v2 schema's
 * rules), so a test checks what a user would see, not what the agent meant to send:
 * - `tool_call_update` creates a call on first sight and PATCHES it afterwards: an omitted field is
 *   unchanged, `null` clears it, a value replaces it (`content` included);
 * - `terminal_update` upserts a terminal with the same patch rule; its `output.data` (base64) is an
 *   authoritative snapshot that REPLACES the bytes held; `exitStatus` ends it;
 * - `terminal_output_chunk` APPENDS its base64-decoded bytes (each chunk decoded on its own);
 * - a terminal's exit is independent of its tool call's status;
 * - `state_update`s are kept in order (running / idle with stop reason and background).
 * Anything a v2 client would reject is reported in `problems` rather than silently fixed.
 */

export interface V2Terminal {
  readonly id: string
  command: string | undefined
  cwd: string | undefined
  bytes: Buffer
  chunks: number
  exitStatus: { readonly exitCode: number | null; readonly signal: string | null } | undefined
  capabilities: any
  /** Output that arrived after the exit (a client would show it; an agent must not send it). */
  afterExit: number
}

export interface V2Call {
  readonly toolCallId: string
  title: string | undefined
  kind: string | undefined
  status: string | undefined
  content: ReadonlyArray<any>
  rawInput: unknown
  rawOutput: unknown
  capabilities: any
  /** Every status the call went through, in order. */
  readonly statuses: Array<string>
}

export interface V2Replay {
  readonly calls: Map<string, V2Call>
  readonly terminals: Map<string, V2Terminal>
  readonly messages: Array<{ readonly kind: string; readonly messageId: string; readonly text: string }>
  readonly states: Array<{ readonly state: string; readonly stopReason?: string | null; readonly background?: ReadonlyArray<any> | null }>
  readonly problems: Array<string>
}

const PATCHED_CALL_FIELDS = ["title", "kind", "status", "content", "rawInput", "rawOutput", "capabilities"] as const

export const replayV2 = (notifications: ReadonlyArray<{ readonly update: any }>): V2Replay => {
  const replay: V2Replay = { calls: new Map(), terminals: new Map(), messages: [], states: [], problems: [] }
  const terminal = (id: string): V2Terminal => {
    let t = replay.terminals.get(id)
    if (t === undefined) {
      t = { id, command: undefined, cwd: undefined, bytes: Buffer.alloc(0), chunks: 0, exitStatus: undefined, capabilities: undefined, afterExit: 0 }
      replay.terminals.set(id, t)
    }
    return t
  }
  for (const { update } of notifications) {
    switch (update.sessionUpdate) {
      case "tool_call_update": {
        let call = replay.calls.get(update.toolCallId)
        if (call === undefined) {
          call = { toolCallId: update.toolCallId, title: undefined, kind: undefined, status: undefined, content: [], rawInput: undefined, rawOutput: undefined, capabilities: undefined, statuses: [] }
          replay.calls.set(update.toolCallId, call)
          if (update.title === undefined) replay.problems.push(`call ${update.toolCallId} created without a title`)
        }
        for (const field of PATCHED_CALL_FIELDS) {
          if (!(field in update)) continue
          ;(call as any)[field] = update[field] === null ? (field === "content" ? [] : undefined) : update[field]
        }
        if (typeof update.status === "string") call.statuses.push(update.status)
        break
      }
      case "tool_call_content_chunk": {
        // Appends one item to the call's content (a replace is a `tool_call_update` with `content`).
        const call = replay.calls.get(update.toolCallId)
        if (call === undefined) replay.problems.push(`content chunk for unknown call ${update.toolCallId}`)
        else call.content = [...call.content, update.content]
        break
      }
      case "terminal_update": {
        const t = terminal(update.terminalId)
        if ("command" in update) t.command = update.command ?? undefined
        if ("cwd" in update) t.cwd = update.cwd ?? undefined
        if ("capabilities" in update) t.capabilities = update.capabilities ?? undefined
        if ("output" in update) t.bytes = update.output === null ? Buffer.alloc(0) : Buffer.from(update.output.data, "base64")
        if ("exitStatus" in update) {
          if (t.exitStatus !== undefined && update.exitStatus !== null) replay.problems.push(`terminal ${t.id} exited twice`)
          t.exitStatus = update.exitStatus ?? undefined
        }
        break
      }
      case "terminal_output_chunk": {
        const t = terminal(update.terminalId)
        if (t.exitStatus !== undefined) t.afterExit++
        t.bytes = Buffer.concat([t.bytes, Buffer.from(update.data, "base64")])
        t.chunks++
        break
      }
      case "agent_message_chunk":
      case "agent_thought_chunk":
        replay.messages.push({ kind: update.sessionUpdate, messageId: update.messageId, text: update.content?.text ?? "" })
        break
      case "state_update":
        replay.states.push({ state: update.state, ...("stopReason" in update ? { stopReason: update.stopReason } : {}), ...("background" in update ? { background: update.background } : {}) })
        break
      default:
        replay.problems.push(`unexpected sessionUpdate ${update.sessionUpdate}`)
        break
    }
  }
  // Every terminal a call's content references must exist by the end.
  for (const call of replay.calls.values()) {
    for (const c of call.content) {
      if (c?.type === "terminal" && !replay.terminals.has(c.terminalId)) replay.problems.push(`call ${call.toolCallId} references unknown terminal ${c.terminalId}`)
    }
  }
  return replay
}
