/**
 * A persisted session shown again (`session/load`): its log's events go through a mapper of this
 * connection exactly as live events do, so the card or text form and Zed's rules (terminal_info on
 * the replayed `tool_call`, output appended, one exit) hold by construction; each prompt comes back
 * as a `user_message_chunk`.
 *
 * Nothing of the old process survives it: a card the log leaves open (a background task, or a
 * command that ran when the agent was killed) ends with what was last recorded and a line saying
 * it was stopped when the agent exited.
 */
import * as Effect from "effect/Effect"
import type { HarnessRestore } from "../Harness/Harness.js"
import * as Intent from "../Presentation/Intent.js"
import { signaled } from "../Terminal/ExitStatus.js"
import type { SessionMapper } from "./Mapping.js"
import type * as SessionLog from "./SessionLog.js"

/** What the harness needs to continue, and whether the session has its title. */
export const restoreOf = (parsed: SessionLog.Parsed): HarnessRestore & { readonly titled: boolean; readonly mode: string | undefined } => {
  let cwd = parsed.header.cwd
  let memory: Array<unknown> = []
  let titled = parsed.header.title !== undefined
  let mode: string | undefined
  const callIds: Array<string> = []
  for (const record of parsed.records) {
    if (record.t === "state") {
      cwd = record.cwd
      memory = record.reset === true ? [...record.memory] : [...memory, ...record.memory]
    } else if (record.t === "title") {
      titled = true
    } else if (record.t === "mode") {
      mode = record.mode
    } else if (record.t === "event" && record.e._tag === "ToolCallStarted") {
      callIds.push(record.e.callId)
    }
  }
  return { cwd, memory, callIds, titled, mode }
}

const stoppedNote = (bg: boolean) =>
  `\n[${bg ? "This task" : "This command"} was stopped when the agent exited; the output above is what was last recorded.]\n`

interface OpenCall {
  readonly bg: boolean
  readonly call: Intent.CallIntent
  output: string
}

export const replay = (options: {
  readonly records: ReadonlyArray<SessionLog.Record>
  readonly mapper: SessionMapper
  /** Emits one `user_message_chunk` with this text. */
  readonly userMessage: (text: string) => Effect.Effect<void>
  /** Cards still running in this process (a session loaded again while live): left open, their updates follow. */
  readonly running?: ReadonlyArray<string>
}): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { mapper } = options
    const open = new Map<string, OpenCall>()
    let turnCalls: Array<string> = []
    for (const record of options.records) {
      switch (record.t) {
        case "prompt": {
          yield* mapper.flush
          turnCalls = []
          const text = record.blocks.map((b) => (b._tag === "Text" ? b.text : `[${b.type}]`)).join("\n")
          yield* options.userMessage(text)
          break
        }
        case "event": {
          const e = record.e
          if (e._tag === "ToolCallStarted") {
            open.set(e.callId, { bg: record.bg === true, call: e.presentation, output: "" })
            if (record.bg !== true) turnCalls.push(e.callId)
          } else if (e._tag === "ToolOutput") {
            const call = open.get(e.callId)
            if (call !== undefined) call.output += e.data
          } else if (e._tag === "ToolCallCompleted") {
            open.delete(e.callId)
          }
          yield* mapper.consume(e)
          break
        }
        case "turnEnd": {
          // As the live session did: a turn's own cards left open were closed when it ended.
          const left = turnCalls.filter((id) => open.has(id) && !options.running?.includes(id))
          for (const id of left) open.delete(id)
          if (left.length > 0) yield* mapper.closeOpen({ signal: "SIGTERM", callIds: left })
          yield* mapper.flush
          break
        }
        case "dropped":
          yield* mapper.consume({
            _tag: "AgentText",
            text: `_[${record.turns} earlier turn${record.turns === 1 ? " was" : "s were"} dropped from this session's log to keep it within its size bound.]_\n\n`
          })
          break
        case "title":
        case "state":
        case "mode":
          break
      }
    }
    for (const [callId, { bg, call, output }] of open) {
      if (options.running?.includes(callId)) continue
      if (call._tag !== "Terminal") {
        yield* mapper.closeOpen({ signal: "SIGKILL", callIds: [callId] })
        continue
      }
      const note = stoppedNote(bg)
      yield* mapper.consume({ _tag: "ToolOutput", callId, data: note })
      yield* mapper.consume({
        _tag: "ToolCallCompleted",
        callId,
        presentation: Intent.TerminalResult.make({
          output: output + note,
          exit: signaled("SIGKILL"),
          statusLines: [],
          facts: { exit_code: null, signal: "SIGKILL", stopped: "the agent exited" }
        })
      })
    }
    yield* mapper.flush
  })
