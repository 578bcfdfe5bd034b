/**
 * The agent's v2 side, for a connection whose client offered protocol version 2 (`../Agent.ts`
 * negotiates and asks this module for whatever differs; a v1 connection never reaches it):
 *
 * - `initialize` answers v2's shape (`info`, `capabilities`);
 * - a session's cards go through the v2 mapper, and permission requests name a `command` subject;
 * - `session/prompt` answers its acknowledgement (a `messageId`) at once; the turn then runs, as
 *   `state_update` running … idle with its stop reason. Turns of one session run one at a time;
 * - `terminal/cancel` and `tool_call/cancel` stop one command through the harness's per-call
 *   cancel, answer at once, and leave the turn running.
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import type { ClientAccess, PromptBlock } from "../../Harness/Harness.js"
import type { AgentInfo } from "../Agent.js"
import { formatParseError, type Peer, type RequestInfo, RpcError } from "../JsonRpc.js"
import type { Mapping, MappingConfig } from "../Mapping.js"
import type * as Session from "../Session.js"
import * as Wire from "../Wire.js"
import * as V2Mapping from "./Mapping.js"
import * as Permission from "./Permission.js"
import type { SessionNotification } from "./SessionUpdate.js"
import * as V2Wire from "./Wire.js"

interface SessionState {
  mapper: V2Mapping.V2SessionMapper | undefined
  readonly turns: Effect.Semaphore
  closed: boolean
}

/** What `session/new` needs to open a v2 session: its mapping and what its harness may ask. */
export interface SessionParts {
  readonly mapping: Mapping["Type"]
  readonly client: ClientAccess
}

export const make = (peer: Peer, info: AgentInfo, mappingConfig: Partial<MappingConfig> = {}) =>
  Effect.gen(function*() {
    /** Negotiated by the connection's first `initialize`; a later one cannot switch the protocol. */
    const version = yield* Ref.make<1 | 2 | undefined>(undefined)
    const sessions = new Map<string, SessionState>()
    const emit = (params: SessionNotification) => peer.notify(Wire.Method.sessionUpdate, params)

    const stateOf = (sessionId: string) =>
      Effect.suspend(() => {
        const state = sessions.get(sessionId)
        return state?.mapper === undefined || state.closed
          ? Effect.fail(RpcError.resourceNotFound(`Session not found: ${sessionId}`))
          : Effect.succeed({ state, mapper: state.mapper })
      })

    /** A v2-only request: unknown to a v1 client (exactly as the peer answers any unknown method). */
    const v2Only = <A, I>(method: string, schema: Schema.Schema<A, I, never>, handler: (params: A) => Effect.Effect<unknown, RpcError>) =>
      (raw: unknown) =>
        Effect.flatMap(Ref.get(version), (v) =>
          v !== 2
            ? Effect.fail(new RpcError({ code: -32601, message: `Method not found: ${method}` }))
            : Schema.decodeUnknown(schema)(raw).pipe(
              Effect.mapError((e) => RpcError.invalidParams(`Invalid params: ${formatParseError(e)}`)),
              Effect.flatMap(handler)
            ))

    return {
      /** Whether this connection negotiated v2. */
      active: Effect.map(Ref.get(version), (v) => v === 2),

      /** Negotiates from the client's offer; `undefined` means v1 (the caller answers as before). */
      initialize: (offered: number) =>
        Effect.gen(function*() {
          const negotiated = yield* Ref.updateAndGet(version, (current) => current ?? V2Wire.negotiate(offered))
          if (negotiated !== 2) return undefined
          return {
            protocolVersion: V2Wire.PROTOCOL_VERSION,
            info,
            capabilities: { session: {} },
            authMethods: []
          }
        }),

      sessionParts: (sessionId: string): SessionParts => {
        const state: SessionState = { mapper: undefined, turns: Effect.unsafeMakeSemaphore(1), closed: false }
        sessions.set(sessionId, state)
        return {
          mapping: {
            // The session's own notifications go out as v2 shapes; Session's v1-typed `emit` is not used.
            forSession: () =>
              Effect.tap(V2Mapping.make(sessionId, emit, mappingConfig), (mapper) => Effect.sync(() => void (state.mapper = mapper)))
          },
          client: { requestPermission: Permission.ask(peer, sessionId) }
        }
      },

      /** `session/new`'s answer: v2 lists the commands in it (no separate update). */
      opened: (session: Session.Session) => ({
        sessionId: session.id,
        availableCommands: session.commands.map((c) => ({
          type: "command",
          name: c.name,
          description: c.description,
          ...(c.hint === undefined ? {} : { input: { type: "text", hint: c.hint } })
        }))
      }),

      /**
       * Acknowledges the prompt and runs its turn after the acknowledgement is on the wire (in the
       * request's fiber, so the connection's end still waits for it).
       */
      prompt: (session: Session.Session, blocks: ReadonlyArray<PromptBlock>, request: RequestInfo) =>
        Effect.map(stateOf(session.id), ({ state }) => {
          request.afterResponse(state.turns.withPermits(1)(Effect.suspend(() => {
            const mapper = state.mapper
            if (state.closed || mapper === undefined) return Effect.void
            return mapper.turnStarted.pipe(
              Effect.zipRight(session.prompt(blocks, request.seq)),
              Effect.flatMap((stopReason) => mapper.turnEnded(stopReason))
            )
          })))
          return { messageId: randomUUID() }
        }),

      /**
       * Closes a v2 session: the turn is cancelled and its final updates (idle, `cancelled`) are
       * sent before the close answers; nothing of the session follows the answer.
       */
      close: (session: Session.Session) =>
        Effect.gen(function*() {
          const state = sessions.get(session.id)
          if (state !== undefined) {
            yield* session.cancelFrom(Number.MAX_SAFE_INTEGER)
            yield* state.turns.withPermits(1)(Effect.sync(() => void (state.closed = true)))
          }
          yield* session.close
          sessions.delete(session.id)
        }),

      terminalCancel: v2Only(V2Wire.Method.terminalCancel, V2Wire.CancelTerminalParams, (params) =>
        stateOf(params.sessionId).pipe(
          Effect.flatMap(({ mapper }) => mapper.cancelTerminal(params.terminalId)),
          Effect.as({})
        )),

      toolCallCancel: v2Only(V2Wire.Method.toolCallCancel, V2Wire.CancelToolCallParams, (params) =>
        stateOf(params.sessionId).pipe(
          Effect.flatMap(({ mapper }) => mapper.cancelToolCall(params.toolCallId)),
          Effect.as({})
        ))
    }
  })
