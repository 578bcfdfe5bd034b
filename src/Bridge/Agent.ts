/**
 * The ACP agent: the methods a client calls, served on a JSON-RPC peer. It owns the sessions and
 * routes each prompt through the harness and the presentation mapping; it never runs a tool.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Harness, type PromptBlock } from "../Harness/Harness.js"
import { Capabilities } from "./Capabilities.js"
import { JsonRpc, RpcError } from "./JsonRpc.js"
import { Mapping, type MappingConfig } from "./Mapping.js"
import * as Modes from "./Modes.js"
import * as Permission from "./Permission.js"
import * as Persistence from "./Persistence.js"
import * as Session from "./Session.js"
import * as SessionId from "./SessionId.js"
import { SessionStore } from "./SessionStore.js"
import * as V2 from "./V2/Agent.js"
import * as V2Wire from "./V2/Wire.js"
import * as Wire from "./Wire.js"

export interface AgentInfo {
  readonly name: string
  readonly title: string
  readonly version: string
}

const toPromptBlock = (block: Wire.ContentBlock): PromptBlock =>
  Wire.isTextBlock(block) ? { _tag: "Text", text: block.text } : { _tag: "Other", type: block.type }

/**
 * Resumes on the event loop's next check phase: after the lines written in this turn have left
 * (stdout is uncorked on the next tick), so work started here never delays an answer.
 */
const afterFlush: Effect.Effect<void> = Effect.async<void>((resume) => {
  const immediate = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(immediate))
})

/**
 * A card's final update (`tool_call_update` completed or failed: the command's exit), which the
 * client waits for. The lines of one synchronous run leave together at its end (Stdio), and after a
 * card's end that run goes on through the turn's end, its log records and the answer: this line
 * is sent at once instead.
 */
const isCardEnd = (params: unknown): boolean => {
  const update = (params as { readonly update?: { readonly sessionUpdate?: unknown; readonly status?: unknown } } | null)?.update
  return update?.sessionUpdate === "tool_call_update" && (update.status === "completed" || update.status === "failed")
}

const notInitialized = new RpcError({ code: -32600, message: "Invalid request: call initialize first" })

/**
 * Registers the agent's methods on the peer and serves `input` until it ends. At the end (or on
 * interruption, e.g. SIGTERM) every turn is cancelled and every session closed, so no process
 * started for a session outlives the connection.
 */
export const serve = <E, R>(
  input: Stream.Stream<Uint8Array | string, E, R>,
  info: AgentInfo,
  options?: { readonly mapping?: Partial<MappingConfig> }
) =>
  Effect.gen(function*() {
    const peer = yield* JsonRpc
    const harness = yield* Harness
    const mapping = yield* Mapping
    const capabilities = yield* Capabilities
    const initialized = yield* Ref.make(false)
    // What the agent starts for later (the harness's prepare) ends with the connection.
    const background = yield* Scope.make()
    const sessions = new Map<string, Session.Session>()
    const closedIds = new Set<string>()
    // ACP v2 when the client offers it; everything v1 below stays as it was for a v1 client.
    const v2 = yield* V2.make(peer, info, options?.mapping)

    const whenInitialized = <A>(effect: Effect.Effect<A, RpcError>) =>
      Effect.flatMap(Ref.get(initialized), (ok) => (ok ? effect : Effect.fail(notInitialized)))

    const session = (id: string) =>
      Effect.suspend(() => {
        const found = sessions.get(id)
        return found !== undefined
          ? Effect.succeed(found)
          : Effect.fail(RpcError.resourceNotFound(closedIds.has(id) ? `Session ${id} is closed` : `Session not found: ${id}`))
      })

    const emit = (params: unknown) => peer.notify(Wire.Method.sessionUpdate, params)
    // A live session's card ends leave at once (see `isCardEnd`); a replay's go out as they come.
    const emitLive = (params: unknown) => peer.notify(Wire.Method.sessionUpdate, params, { flush: isCardEnd(params) })

    const v1Parts = (id: string) => ({ mapping, client: { requestPermission: Permission.ask(peer, id) } })
    const openLive = (id: string, cwd: string, additionalDirectories: ReadonlyArray<string>, sessionHarness: Harness["Type"]) =>
      Session.open({ id, cwd, additionalDirectories, harness: sessionHarness, emit: emitLive, ...v1Parts(id) })

    const announce = (opened: Session.Session) =>
      emit({
        sessionId: opened.id,
        update: {
          sessionUpdate: "available_commands_update",
          availableCommands: opened.commands.map((c) => ({
            name: c.name,
            description: c.description,
            ...(c.hint === undefined ? {} : { input: { hint: c.hint } })
          }))
        }
      })

    // With a session store (the command's default), sessions are persisted and can be listed,
    // loaded, resumed and deleted; without one (an embedder's choice, `--no-persist`), as before.
    const persistence = Option.map(yield* Effect.serviceOption(SessionStore), (store) =>
      Persistence.make({ store, peer, harness, mapping, emit, openLive, sessions, closedIds, whenInitialized, announce, isV2: v2.active }))
    if (Option.isSome(persistence)) yield* persistence.value.register

    yield* peer.handle(Wire.Method.initialize, Wire.InitializeParams, (params, request) =>
      Effect.gen(function*() {
        // A client opens a session next, and the first session waits for the harness's probes:
        // start them once this answer has left, so they run while the client reads it.
        if (harness.prepare !== undefined) request.afterResponse(Effect.asVoid(Effect.forkIn(Effect.zipRight(afterFlush, harness.prepare), background)))
        const negotiatedV2 = yield* v2.initialize(params.protocolVersion)
        if (negotiatedV2 !== undefined) {
          yield* Ref.set(initialized, true)
          return negotiatedV2
        }
        yield* capabilities.set(params)
        yield* Ref.set(initialized, true)
        return {
          protocolVersion: Wire.PROTOCOL_VERSION,
          agentCapabilities: {
            loadSession: false,
            promptCapabilities: { image: false, audio: false, embeddedContext: false },
            mcpCapabilities: { http: false, sse: false },
            sessionCapabilities: { close: {} },
            // With persistence: `loadSession: true` and list / resume / close / delete.
            ...(Option.isSome(persistence) ? Persistence.capabilities : {})
          },
          authMethods: [],
          agentInfo: info
        }
      }))

    yield* peer.handle(Wire.Method.authenticate, Wire.AuthenticateParams, (params) =>
      whenInitialized(Effect.fail(RpcError.invalidParams(
        `Invalid params: methodId ${JSON.stringify(params.methodId)} is not offered; this agent needs no authentication`
      ))))

    yield* peer.handle(Wire.Method.sessionNew, Wire.NewSessionParams, (params, request) =>
      whenInitialized(Effect.gen(function*() {
        const id = SessionId.make()
        const isV2 = yield* v2.active
        const opened = yield* (isV2 || Option.isNone(persistence)
          ? Session.open({
            id,
            cwd: params.cwd,
            additionalDirectories: params.additionalDirectories,
            harness,
            emit: emitLive,
            ...(isV2 ? v2.sessionParts(id) : v1Parts(id))
          })
          // A v2 session is not persisted: v2's session/list and session/resume are not served yet.
          : persistence.value.create(id, params.cwd, params.additionalDirectories))
        sessions.set(id, opened)
        yield* Effect.logInfo(`session ${id} opened in ${params.cwd}`)
        // ACP v2 sessions do not offer modes yet (v2 has config options only; not wired here).
        if (isV2) return v2.opened(opened)
        const note = opened.modes?.note
        if (note !== undefined) {
          yield* Effect.logInfo(`session ${id}: ${note}`)
          if (yield* capabilities.notices) request.afterResponse(emit({ sessionId: id, update: Modes.noticeUpdate(note) }))
        }
        // After the response is on the wire, so the client knows the session the update names.
        request.afterResponse(announce(opened))
        return { sessionId: id, ...(yield* Modes.newSessionFields(opened.modes)) }
      })))

    yield* Modes.register({ peer, session, whenInitialized, emit, isV2: v2.active })

    yield* peer.handle(Wire.Method.sessionPrompt, Wire.PromptParams, (params, request) =>
      whenInitialized(Effect.gen(function*() {
        const target = yield* session(params.sessionId)
        if (yield* v2.active) return yield* v2.prompt(target, params.prompt.map(toPromptBlock), request)
        const stopReason = yield* target.prompt(params.prompt.map(toPromptBlock), request.seq)
        return { stopReason }
      })))

    yield* peer.onNotification(Wire.Method.sessionCancel, Wire.CancelParams, (params, notification) => {
      const target = sessions.get(params.sessionId)
      return target === undefined
        ? Effect.logWarning(`cancel for unknown session ${params.sessionId}`)
        : target.cancelFrom(notification.seq)
    })

    yield* peer.handle(Wire.Method.sessionClose, Wire.CloseSessionParams, (params) =>
      whenInitialized(Effect.gen(function*() {
        // Closing twice is not an error: the session is closed either way.
        if (closedIds.has(params.sessionId)) return {}
        const target = yield* session(params.sessionId)
        sessions.delete(target.id)
        closedIds.add(target.id)
        yield* ((yield* v2.active) ? v2.close(target) : target.close)
        yield* Effect.logInfo(`session ${target.id} closed`)
        return {}
      })))

    // v2 only (a v1 client gets -32601, as for any unknown method): one command's Stop.
    yield* peer.handle(V2Wire.Method.terminalCancel, Schema.Unknown, (params) => v2.terminalCancel(params))
    yield* peer.handle(V2Wire.Method.toolCallCancel, Schema.Unknown, (params) => v2.toolCallCancel(params))

    const closeAll = Effect.suspend(() => {
      const all = [...sessions.values()]
      sessions.clear()
      for (const s of all) closedIds.add(s.id)
      return Effect.forEach(all, (s) => s.close, { concurrency: "unbounded", discard: true })
    })

    // When the client stops writing, cancel what runs and what is queued, so in-flight prompts
    // answer promptly and nothing new starts.
    const cancelAll = Effect.suspend(() =>
      Effect.forEach([...sessions.values()], (s) => s.cancelFrom(Number.MAX_SAFE_INTEGER), { discard: true })
    )
    yield* peer.serve(Stream.concat(input, Stream.execute(cancelAll))).pipe(
      Effect.ensuring(closeAll),
      Effect.ensuring(Scope.close(background, Exit.void))
    )
  })
