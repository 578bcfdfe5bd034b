/**
 * Replays `session/update` params the way Zed's ACP client consumes them (crates/agent_servers
 * acp.rs + acp_thread), so a test can check what the user would actually see on a terminal card:
 * - `_meta.terminal_info` is read ONLY on `tool_call` (once per id) and creates the terminal;
 * - `_meta.terminal_output` (or the delta key for such clients) is read ONLY on `tool_call_update`
 *   and its `data` is APPENDED to the terminal;
 * - `_meta.terminal_exit` is read on `tool_call_update` and ends the terminal;
 * - an update's `content` REPLACES the card's content list.
 * Anything Zed would ignore or trip over is reported in `problems` instead of being silently fixed.
 */

export interface ReplayedTerminal {
  readonly id: string
  readonly cwd: string | undefined
  output: string
  /** Number of output updates appended. */
  chunks: number
  exit: { readonly exit_code: number | null; readonly signal: string | null } | undefined
}

export interface ReplayedCard {
  readonly toolCallId: string
  title: string
  status: string | undefined
  content: ReadonlyArray<any>
  rawOutput: unknown
  terminal: ReplayedTerminal | undefined
}

export interface Replay {
  readonly cards: Map<string, ReplayedCard>
  readonly terminals: Map<string, ReplayedTerminal>
  readonly messages: Array<{ readonly kind: string; readonly text: string }>
  readonly problems: Array<string>
}

export const replayLikeZed = (
  notifications: ReadonlyArray<{ readonly update: any }>,
  options: { readonly outputKey?: "terminal_output" | "terminal_output_delta" } = {}
): Replay => {
  const outputKey = options.outputKey ?? "terminal_output"
  const replay: Replay = { cards: new Map(), terminals: new Map(), messages: [], problems: [] }
  const checkContent = (where: string, content: ReadonlyArray<any>) => {
    for (const item of content) {
      if (item?.type === "terminal" && !replay.terminals.has(item.terminalId)) {
        replay.problems.push(`${where}: content references unknown terminal ${item.terminalId}`)
      }
    }
  }
  for (const { update } of notifications) {
    const meta = update._meta ?? {}
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
      case "agent_thought_chunk":
      case "user_message_chunk":
        replay.messages.push({ kind: update.sessionUpdate, text: update.content.text })
        break
      case "session_info_update":
      case "available_commands_update":
        // Session metadata: shown elsewhere than in the thread.
        break
      case "tool_call": {
        if (replay.cards.has(update.toolCallId)) replay.problems.push(`tool_call ${update.toolCallId} sent twice`)
        let terminal: ReplayedTerminal | undefined
        if (meta.terminal_info !== undefined) {
          const id = meta.terminal_info.terminal_id
          if (replay.terminals.has(id)) replay.problems.push(`terminal ${id} created twice`)
          terminal = { id, cwd: meta.terminal_info.cwd, output: "", chunks: 0, exit: undefined }
          replay.terminals.set(id, terminal)
        }
        if (meta.terminal_output !== undefined || meta.terminal_output_delta !== undefined || meta.terminal_exit !== undefined) {
          replay.problems.push(`tool_call ${update.toolCallId} carries output/exit meta, which Zed ignores there`)
        }
        const content = update.content ?? []
        checkContent(`tool_call ${update.toolCallId}`, content)
        replay.cards.set(update.toolCallId, {
          toolCallId: update.toolCallId,
          title: update.title,
          status: update.status,
          content,
          rawOutput: undefined,
          terminal
        })
        break
      }
      case "tool_call_update": {
        const card = replay.cards.get(update.toolCallId)
        if (card === undefined) {
          replay.problems.push(`update for unknown tool call ${update.toolCallId}`)
          break
        }
        if (meta.terminal_info !== undefined) replay.problems.push(`terminal_info on an update is ignored by Zed (${update.toolCallId})`)
        const out = meta[outputKey]
        if (out !== undefined) {
          const terminal = replay.terminals.get(out.terminal_id)
          if (terminal === undefined) replay.problems.push(`output for unknown terminal ${out.terminal_id}`)
          else if (terminal.exit !== undefined) replay.problems.push(`output after exit on terminal ${out.terminal_id}`)
          else if (typeof out.data !== "string") replay.problems.push(`non-string data on terminal ${out.terminal_id}`)
          else {
            terminal.output += out.data
            terminal.chunks++
          }
          if ("content" in update) replay.problems.push(`output update ${update.toolCallId} also replaces content`)
        }
        if (meta.terminal_exit !== undefined) {
          const terminal = replay.terminals.get(meta.terminal_exit.terminal_id)
          if (terminal === undefined) replay.problems.push(`exit for unknown terminal ${meta.terminal_exit.terminal_id}`)
          else if (terminal.exit !== undefined) replay.problems.push(`second exit on terminal ${terminal.id}`)
          else {
            const code = meta.terminal_exit.exit_code
            if (code !== null && !(Number.isInteger(code) && code >= 0)) replay.problems.push(`exit_code ${code} is not unsigned`)
            terminal.exit = { exit_code: code, signal: meta.terminal_exit.signal }
          }
        }
        if (update.status != null) card.status = update.status
        if (update.title != null) card.title = update.title
        if (update.content != null) {
          checkContent(`tool_call_update ${update.toolCallId}`, update.content)
          card.content = update.content
        }
        if (update.rawOutput !== undefined) card.rawOutput = update.rawOutput
        break
      }
      default:
        replay.problems.push(`unexpected sessionUpdate ${update.sessionUpdate}`)
    }
  }
  return replay
}
