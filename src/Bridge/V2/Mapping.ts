/**
 * Presentation → ACP v2. The v2 counterpart of `../Mapping.ts`, on the same `HarnessEvent`s and
 * render intents, for a client that negotiated protocol version 2:
 *
 * - a call is created and patched by `tool_call_update` (patch semantics: a field left out is
 *   unchanged, so live updates and a terminal result do not re-send the content);
 * - a terminal intent opens an agent-owned terminal (`terminal_update` with the command and its
 *   absolute cwd, referenced by `{type:"terminal"}` content); its output is the command's raw bytes
 *   as base64 `terminal_output_chunk`s (coalesced like v1, under the same display budget); its end
 *   is a `terminal_update` with `exitStatus`. When nothing was streamed, that last update carries
 *   the whole output as its snapshot.
 * - while a call can be stopped alone (its harness gave a per-call cancel and it is running), it
 *   and its terminal advertise `capabilities.cancel`; the end clears them;
 * - text and diffs are tool-call content; agent text chunks carry a message id;
 * - the turn is `state_update`s: running, then idle with its stop reason and the terminals still
 *   running in the background, and idle again (without a stop reason) when one of those ends.
 *
 * One lock orders all emission of a session, as in v1.
 */
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import { isAbsolute } from "node:path"
import type { HarnessEvent, StopReason } from "../../Harness/HarnessEvent.js"
import * as Intent from "../../Presentation/Intent.js"
import { RpcError } from "../JsonRpc.js"
import { defaultConfig, type MappingConfig, type SessionMapper } from "../Mapping.js"
import { textBlock } from "../SessionUpdate.js"
import { DisplayBudget } from "../DisplayBudget.js"
import {
  CANCEL,
  diffContent,
  type ExitStatus as WireExit,
  type SessionNotification,
  type SessionUpdate,
  terminalContent,
  type ToolCallContent
} from "./SessionUpdate.js"
import { base64, callBody, exitStatusOf, finalContent, locationsOf, texts } from "./CardContent.js"
import { TerminalStream } from "./TerminalStream.js"

/** The v2 mapper of one session: the v1 contract, plus the per-call Stop and the turn's state. */
export interface V2SessionMapper extends SessionMapper {
  /** `terminal/cancel`: stops that terminal's command alone; answers at once, the exit follows. */
  readonly cancelTerminal: (terminalId: string) => Effect.Effect<void, RpcError>
  /** `tool_call/cancel`: the same for a call; the call ends `cancelled` unless it finished first. */
  readonly cancelToolCall: (toolCallId: string) => Effect.Effect<void, RpcError>
  /** The session's turn started: `state_update` running. */
  readonly turnStarted: Effect.Effect<void>
  /** The turn ended: `state_update` idle with its stop reason and the background terminals. */
  readonly turnEnded: (stopReason: StopReason) => Effect.Effect<void>
}

interface CallState {
  /** Whether the call opened a terminal (same id as the call). */
  readonly terminal: boolean
  /** The call's own text content (a description), which a plain call re-states at its end. */
  readonly callTexts: ReadonlyArray<ToolCallContent>
  readonly budget: DisplayBudget
  readonly stream: TerminalStream
  readonly cancel: Effect.Effect<void> | undefined
  /** `capabilities.cancel` is advertised now. */
  cancellable: boolean
  /** A `tool_call/cancel` was accepted: a failed end reads `cancelled`. */
  cancelledAsCall: boolean
}

export const make = (
  sessionId: string,
  emit: (params: SessionNotification) => Effect.Effect<void>,
  partial: Partial<MappingConfig> = {}
): Effect.Effect<V2SessionMapper, never, Scope.Scope> =>
  Effect.gen(function*() {
    const config = { ...defaultConfig, ...partial }
    const lock = yield* Effect.makeSemaphore(1)
    const calls = new Map<string, CallState>()
    /** Calls that ended, so a late cancel is told so rather than "unknown". */
    const ended = new Set<string>()
    /** Terminals the last idle `state_update` listed as running in the background. */
    const listed = new Set<string>()
    let idle = true
    /** The message the next text (or thought) chunk belongs to; any other event starts a new one. */
    let messageId: { readonly kind: "text" | "thought"; readonly id: string } | undefined
    const locked = <A, E>(effect: Effect.Effect<A, E>) => lock.withPermits(1)(Effect.suspend(() => effect))
    const send = (update: SessionUpdate) => emit({ sessionId, update })
    const timers = yield* FiberSet.make<void, never>()
    const streams = { lock: locked, send, coalesceMs: config.coalesceMs, liveOutput: config.liveOutput, timers }

    const chunk = (kind: "text" | "thought", text: string) => {
      if (text === "") return Effect.void
      if (messageId?.kind !== kind) messageId = { kind, id: randomUUID() }
      return send({ sessionUpdate: kind === "text" ? "agent_message_chunk" : "agent_thought_chunk", messageId: messageId.id, content: textBlock(text) })
    }

    const backgroundList = () => [...listed].map((terminalId) => ({ type: "terminal" as const, terminalId }))
    const openTerminals = () => [...calls].filter(([, s]) => s.terminal).map(([id]) => id)

    const onStarted = (callId: string, call: Intent.CallIntent, pending: boolean, cancel: Effect.Effect<void> | undefined) =>
      Effect.gen(function*() {
        if (calls.has(callId) || ended.has(callId)) return yield* Effect.logWarning(`tool call ${callId} started twice; ignored`)
        const terminal = call._tag === "Terminal"
        const cancellable = cancel !== undefined && !pending
        const state: CallState = {
          terminal,
          callTexts: call._tag === "Diff" ? [] : texts(call.content),
          budget: new DisplayBudget(config.displayBudgetBytes, config.displayTailBytes),
          stream: new TerminalStream(callId, streams),
          cancel,
          cancellable,
          cancelledAsCall: false
        }
        calls.set(callId, state)
        // The terminal first, so a client resolves the content's reference at once.
        if (call._tag === "Terminal") {
          yield* send({
            sessionUpdate: "terminal_update",
            terminalId: callId,
            command: call.title,
            ...(isAbsolute(call.cwd) ? { cwd: call.cwd } : {}),
            ...(cancellable ? { capabilities: CANCEL } : {})
          })
        }
        yield* send({
          sessionUpdate: "tool_call_update",
          toolCallId: callId,
          title: call.title,
          kind: call.kind,
          status: pending ? "pending" : "in_progress",
          content: terminal ? [...callBody(call), terminalContent(callId)] : callBody(call),
          ...locationsOf(call.locations),
          ...(call.input !== undefined ? { rawInput: call.input } : {}),
          ...(cancellable ? { capabilities: CANCEL } : {})
        })
      })

    const onRunning = (callId: string) => {
      const state = calls.get(callId)
      if (state === undefined) return Effect.void
      const advertise = state.cancel !== undefined && !state.cancellable
      state.cancellable = state.cancel !== undefined
      return Effect.zipRight(
        advertise && state.terminal ? send({ sessionUpdate: "terminal_update", terminalId: callId, capabilities: CANCEL }) : Effect.void,
        send({ sessionUpdate: "tool_call_update", toolCallId: callId, status: "in_progress", ...(advertise ? { capabilities: CANCEL } : {}) })
      )
    }

    const onOutput = (callId: string, chunk: { readonly data: string; readonly bytes?: Uint8Array | undefined }) => {
      const state = calls.get(callId)
      if (state === undefined || !state.terminal) return Effect.void
      // Text without bytes (a harness that only has text, a note the executor added) is shown as its UTF-8.
      return state.stream.push(state.budget.push(chunk.bytes ?? Buffer.from(chunk.data, "utf8")))
    }

    /** Ends a call's terminal: the rest of its output, then its exit (and no Stop any more). */
    const endTerminal = (callId: string, state: CallState, exit: WireExit, output: string | undefined) =>
      Effect.gen(function*() {
        // Nothing was streamed: the exit carries the whole output as the terminal's snapshot.
        const snapshot = !state.budget.received && output !== undefined && output !== ""
          ? state.budget.push(Buffer.from(output, "utf8"))
          : undefined
        const rest = state.budget.finishBytes()
        if (snapshot === undefined) yield* state.stream.push(rest)
        yield* state.stream.close
        yield* send({
          sessionUpdate: "terminal_update",
          terminalId: callId,
          ...(snapshot === undefined ? {} : { output: { data: base64(Buffer.concat([snapshot, rest])) } }),
          exitStatus: exit,
          capabilities: null
        })
      })

    /** After a call ended: a background terminal that ends while idle updates the idle listing. */
    const forget = (callId: string) => {
      calls.delete(callId)
      ended.add(callId)
      if (!idle || !listed.delete(callId)) return Effect.void
      return send({ sessionUpdate: "state_update", state: "idle", background: backgroundList() })
    }

    const onCompleted = (callId: string, result: Intent.ResultIntent) =>
      Effect.gen(function*() {
        const state = calls.get(callId)
        if (state === undefined) return yield* Effect.logWarning(`tool call ${callId} completed but was never started; ignored`)
        messageId = undefined
        if (state.terminal) {
          yield* endTerminal(callId, state, exitStatusOf(result._tag === "Terminal" ? result.exit : undefined), result._tag === "Terminal" ? result.output : undefined)
        }
        const status = Intent.statusOf(result)
        const content = finalContent(state.terminal, state.callTexts, callId, result)
        yield* send({
          sessionUpdate: "tool_call_update",
          toolCallId: callId,
          status: state.cancelledAsCall && status === "failed" ? "cancelled" : status,
          ...(content === undefined ? {} : { content }),
          ...(result._tag !== "Terminal" ? locationsOf(result.locations) : {}),
          ...(result.facts !== undefined ? { rawOutput: result.facts } : {}),
          ...(state.cancel !== undefined ? { capabilities: null } : {})
        })
        yield* forget(callId)
      })

    const closeOne = (callId: string, state: CallState, signal: string) =>
      Effect.gen(function*() {
        if (state.terminal) yield* endTerminal(callId, state, { exitCode: null, signal }, undefined)
        yield* send({
          sessionUpdate: "tool_call_update",
          toolCallId: callId,
          status: state.cancelledAsCall ? "cancelled" : "failed",
          rawOutput: { exit_code: null, signal },
          ...(state.cancel !== undefined ? { capabilities: null } : {})
        })
        yield* forget(callId)
      })

    /** The files an ended call changed: appended to its content, one item at a time, then their locations. */
    const onFilesChanged = (callId: string, changed: Intent.ChangedFiles) => {
      if (!ended.has(callId)) return Effect.logWarning(`files changed by ${callId}, which has not ended; ignored`)
      const items = [...changed.diffs.map(diffContent), ...texts(changed.notes)]
      return Effect.zipRight(
        Effect.forEach(items, (content) => send({ sessionUpdate: "tool_call_content_chunk", toolCallId: callId, content }), { discard: true }),
        changed.locations.length === 0 ? Effect.void : send({ sessionUpdate: "tool_call_update", toolCallId: callId, locations: changed.locations })
      )
    }

    const consume = (event: HarnessEvent): Effect.Effect<void> =>
      locked(Effect.suspend((): Effect.Effect<void> => {
        switch (event._tag) {
          case "AgentText":
            return chunk("text", event.text)
          case "AgentThought":
            return chunk("thought", event.text)
          case "ToolCallStarted":
            messageId = undefined
            return onStarted(event.callId, event.presentation, event.pending, event.cancel)
          case "ToolCallRunning":
            return onRunning(event.callId)
          case "ToolOutput":
            return onOutput(event.callId, event)
          case "ToolCallCompleted":
            return onCompleted(event.callId, event.presentation)
          case "ToolCallFilesChanged":
            return onFilesChanged(event.callId, event.changed)
          case "TurnEnded":
            return flushAll
        }
      }))

    const flushAll: Effect.Effect<void> = Effect.suspend(() => Effect.forEach([...calls.values()], (s) => s.stream.flush, { discard: true }))

    /** Finds a call that can be stopped now, or says why not (-32602, as the v2 schema asks). */
    const stoppable = (id: string, what: "Terminal" | "Tool call") =>
      Effect.suspend(() => {
        const state = calls.get(id)
        if (state === undefined || (what === "Terminal" && !state.terminal)) {
          return Effect.fail(RpcError.invalidParams(ended.has(id) ? `${what} ${id} has already ended` : `Unknown ${what.toLowerCase()}: ${id}`))
        }
        if (!state.cancellable || state.cancel === undefined) {
          return Effect.fail(RpcError.invalidParams(`${what} ${id} cannot be cancelled now`))
        }
        return Effect.succeed({ state, cancel: state.cancel })
      })

    return {
      consume,
      flush: locked(flushAll),
      closeOpen: (options) =>
        locked(Effect.suspend(() => {
          const ids = options?.callIds
          const targets = [...calls].filter(([callId]) => ids === undefined || ids.includes(callId))
          return Effect.forEach(targets, ([callId, state]) => closeOne(callId, state, options?.signal ?? "SIGTERM"), { discard: true })
        })),
      openCalls: locked(Effect.sync(() => [...calls.keys()])),
      // The harness's cancel runs outside the lock: it stops the call, whose end then comes through `consume`.
      cancelTerminal: (terminalId) => Effect.flatMap(locked(stoppable(terminalId, "Terminal")), ({ cancel }) => cancel),
      cancelToolCall: (toolCallId) =>
        Effect.flatMap(
          locked(Effect.tap(stoppable(toolCallId, "Tool call"), ({ state }) => Effect.sync(() => void (state.cancelledAsCall = true)))),
          ({ cancel }) => cancel
        ),
      turnStarted: locked(Effect.suspend(() => {
        idle = false
        messageId = undefined
        const background = openTerminals()
        return send({ sessionUpdate: "state_update", state: "running", ...(background.length > 0 ? { background: background.map((terminalId) => ({ type: "terminal" as const, terminalId })) } : {}) })
      })),
      turnEnded: (stopReason) =>
        locked(Effect.suspend(() => {
          idle = true
          messageId = undefined
          // The turn's own calls are closed by now: what is still open runs in the background.
          listed.clear()
          for (const id of openTerminals()) listed.add(id)
          return Effect.zipRight(flushAll, send({ sessionUpdate: "state_update", state: "idle", stopReason, background: backgroundList() }))
        }))
    } satisfies V2SessionMapper
  })
