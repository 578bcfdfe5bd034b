/**
 * A session's modes on the ACP v1 wire, both ways clients use today: `modes` (SessionModeState)
 * with `session/set_mode` and `current_mode_update`, and a `select` config option of category
 * `mode` with `session/set_config_option` and `config_option_update`. Either way of setting it
 * moves the one mode of the harness session, and both updates follow, so a client reading either
 * form stays in step.
 */
import * as Effect from "effect/Effect"
import type { SessionModes } from "../Harness/Harness.js"
import { type JsonRpc, type RequestInfo, RpcError } from "./JsonRpc.js"
import type * as Session from "./Session.js"
import * as Wire from "./Wire.js"

/** The config option's id. */
export const CONFIG_ID = "mode"

const DESCRIPTION = "What the agent's commands may touch, and whether they ask first."

export const modeState = (modes: SessionModes, currentModeId: string) => ({
  currentModeId,
  availableModes: modes.available.map((m) => ({ id: m.id, name: m.name, description: m.description }))
})

export const configOptions = (modes: SessionModes, currentValue: string) => [{
  id: CONFIG_ID,
  name: "Mode",
  description: modes.note === undefined ? DESCRIPTION : `${DESCRIPTION} ${modes.note}`,
  category: "mode",
  type: "select",
  currentValue,
  options: modes.available.map((m) => ({ value: m.id, name: m.name, description: m.description }))
}]

/** The `session/new` response's fields for a session with modes (none without). */
export const newSessionFields = (modes: SessionModes | undefined) =>
  modes === undefined ? Effect.succeed({}) : Effect.map(modes.current, (current) => ({
    modes: modeState(modes, current),
    configOptions: configOptions(modes, current)
  }))

/** The `notice` for a session whose sandboxed modes are not offered (sent only to clients that show notices). */
export const noticeUpdate = (note: string) => ({
  sessionUpdate: "notice",
  severity: "warning",
  title: "Sandboxed modes are not available",
  description: note
})

/**
 * Registers `session/set_mode` and `session/set_config_option`. A bad session id is -32002, a
 * session without modes, an unknown config id or an unknown value is -32602, and the mode is unchanged.
 */
export const register = (options: {
  readonly peer: JsonRpc["Type"]
  readonly session: (id: string) => Effect.Effect<Session.Session, RpcError>
  readonly whenInitialized: <A>(effect: Effect.Effect<A, RpcError>) => Effect.Effect<A, RpcError>
  readonly emit: (params: unknown) => Effect.Effect<void>
  /** The connection speaks ACP v2, whose sessions do not offer modes (yet). */
  readonly isV2: Effect.Effect<boolean>
}) =>
  Effect.gen(function*() {
    const { emit, peer, whenInitialized } = options

    /** Sets the mode, then (after the response) tells the client in both forms. */
    const setMode = (sessionId: string, modeId: string, request: RequestInfo) =>
      Effect.gen(function*() {
        const target = yield* options.session(sessionId)
        const modes = (yield* options.isV2) ? undefined : target.modes
        if (modes === undefined) return yield* Effect.fail(RpcError.invalidParams("Invalid params: this session has no modes"))
        yield* modes.set(modeId).pipe(Effect.mapError((e) => RpcError.invalidParams(`Invalid params: ${e.message}`)))
        const current = yield* modes.current
        yield* Effect.logInfo(`session ${sessionId}: mode ${current}`)
        request.afterResponse(Effect.zipRight(
          emit({ sessionId, update: { sessionUpdate: "current_mode_update", currentModeId: current } }),
          emit({ sessionId, update: { sessionUpdate: "config_option_update", configOptions: configOptions(modes, current) } })
        ))
        return configOptions(modes, current)
      })

    yield* peer.handle(Wire.Method.sessionSetMode, Wire.SetSessionModeParams, (params, request) =>
      whenInitialized(Effect.as(setMode(params.sessionId, params.modeId, request), {})))

    yield* peer.handle(Wire.Method.sessionSetConfigOption, Wire.SetSessionConfigOptionParams, (params, request) =>
      whenInitialized(Effect.gen(function*() {
        // The session first: an unknown session is -32002 whatever the option.
        yield* options.session(params.sessionId)
        if (params.configId !== CONFIG_ID) {
          return yield* Effect.fail(RpcError.invalidParams(`Invalid params: unknown config option ${JSON.stringify(params.configId)}`))
        }
        if (params.type === "boolean" || typeof params.value !== "string") {
          return yield* Effect.fail(RpcError.invalidParams(`Invalid params: "${CONFIG_ID}" is a select option: its value is a mode id`))
        }
        return { configOptions: yield* setMode(params.sessionId, params.value, request) }
      })))
  })
