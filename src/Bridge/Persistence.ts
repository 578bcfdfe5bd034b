/**
 * Sessions that outlive the process: a new session is recorded into its log, and
 * `session/list`, `session/load` (replay, then prompts), `session/resume` (no replay) and
 * `session/delete` serve the logs of the store. A reopened session runs under the same id, in the
 * shell directory it had reached and, for a model, with its history.
 *
 * One process writes a session at a time (a lock file); a log that is not ours, is corrupt or is
 * from a newer version is refused with an error that says so, and the agent keeps serving.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Scope from "effect/Scope"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import type { Harness } from "../Harness/Harness.js"
import { type Peer, RpcError } from "./JsonRpc.js"
import type { Mapping } from "./Mapping.js"
import * as Modes from "./Modes.js"
import type { Session } from "./Session.js"
import * as SessionLock from "./SessionLock.js"
import * as SessionLog from "./SessionLog.js"
import * as SessionRecorder from "./SessionRecorder.js"
import * as SessionReplay from "./SessionReplay.js"
import * as Store from "./SessionStore.js"
import * as SessionWire from "./SessionWire.js"

export interface Deps {
  readonly store: Store.StoreConfig
  readonly peer: Peer
  readonly harness: Harness["Type"]
  readonly mapping: Mapping["Type"]
  readonly emit: (params: unknown) => Effect.Effect<void>
  /** Opens a live session with the given harness (the agent's `Session.open`). */
  readonly openLive: (id: string, cwd: string, additionalDirectories: ReadonlyArray<string>, harness: Harness["Type"]) => Effect.Effect<Session>
  /** The agent's live sessions, and the ids closed in this process. */
  readonly sessions: Map<string, Session>
  readonly closedIds: Set<string>
  readonly whenInitialized: <A>(effect: Effect.Effect<A, RpcError>) => Effect.Effect<A, RpcError>
  /** Tells the client a session's slash commands, once it knows the session. */
  readonly announce: (session: Session) => Effect.Effect<void>
  /** The connection speaks ACP v2, whose session methods differ: these are v1's. */
  readonly isV2: Effect.Effect<boolean>
}

/** What `initialize` advertises, as the v1 schema spells it (`loadSession` is top-level in v1). */
export const capabilities = { loadSession: true, sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {} } } as const

const notFound = (id: string) => RpcError.resourceNotFound(`Session not found: ${id}`)

const fromFs = <A>(what: string, f: () => A) =>
  Effect.try({ try: f, catch: (error) => RpcError.internal(`${what}: ${(error as Error).message}`) })

const encodeCursor = (entry: Store.Listed) => Buffer.from(JSON.stringify({ m: entry.mtimeMs, id: entry.sessionId })).toString("base64url")
const decodeCursor = (cursor: string): { m: number; id: string } | undefined => {
  try {
    const value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    return typeof value?.m === "number" && typeof value?.id === "string" ? value : undefined
  } catch {
    return undefined
  }
}

export const make = (deps: Deps) => {
  const { store, sessions, closedIds } = deps
  /** The recorders of this process's persisted sessions. */
  const recorders = new Map<string, SessionRecorder.Recorder>()

  const sessionInfo = (id: string, title: string) =>
    deps.emit({ sessionId: id, update: { sessionUpdate: "session_info_update", title, updatedAt: new Date().toISOString() } })

  /** The live session, closing its log and giving its lock up when it closes. */
  const persistent = (session: Session, log: Store.LogWriter, recorder: SessionRecorder.Recorder, fresh: boolean): Session => ({
    ...session,
    close: session.close.pipe(Effect.zipRight(log.close), Effect.zipRight(Effect.sync(() => {
      // A new session never prompted leaves nothing behind (an editor opens many threads).
      if (fresh && !recorder.prompted()) Store.remove(store, session.id)
      SessionLock.release(Store.lockPath(store, session.id))
      if (recorders.get(session.id) === recorder) recorders.delete(session.id)
    })))
  })

  /**
   * `session/new`: the session, recorded from its first prompt on. Where no log can be written (a
   * read-only home, a full disk) the session still opens, in memory only, and the log line says why.
   */
  const create = (id: string, cwd: string, additionalDirectories: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const created = yield* fromFs(`cannot create the session log in ${store.dir}`, () => {
        const writer = Store.create(store, { magic: SessionLog.MAGIC, v: SessionLog.VERSION, t: "header", id, cwd, harness: store.harness, createdAt: new Date().toISOString() })
        SessionLock.acquire(Store.lockPath(store, id))
        return writer
      }).pipe(Effect.either)
      if (Either.isLeft(created)) {
        yield* Effect.logWarning(`session ${id} is not persisted: ${created.left.message}`)
        return yield* deps.openLive(id, cwd, additionalDirectories, deps.harness)
      }
      const log = created.right
      const recorder = SessionRecorder.make(deps.harness, { log, titled: false, onTitle: (title) => sessionInfo(id, title) })
      recorders.set(id, recorder)
      return persistent(yield* deps.openLive(id, cwd, additionalDirectories, recorder.harness), log, recorder, true)
    })

  const checkId = (id: string) => (Store.isValidId(id) ? Effect.void : Effect.fail(notFound(id)))

  const readLog = (id: string) =>
    Effect.suspend(() => {
      if (!Store.exists(store, id)) return Effect.fail(notFound(id))
      const parsed = Store.read(store, id)
      return Either.isLeft(parsed)
        ? Effect.zipRight(Effect.logWarning(parsed.left.message), Effect.fail(RpcError.internal(`Cannot load session ${id}: ${parsed.left.message}`)))
        : Effect.as(Effect.forEach(parsed.right.warnings, (w) => Effect.logWarning(w), { discard: true }), parsed.right)
    })

  const checkCwd = (id: string, header: SessionLog.Header, cwd: string) =>
    header.cwd === cwd
      ? Effect.void
      : Effect.fail(RpcError.invalidParams(`Invalid params: session ${id} belongs to ${header.cwd}, not ${cwd}`))

  const replayTo = (id: string, records: ReadonlyArray<SessionLog.Record>, running: ReadonlyArray<string> = []) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const mapper = yield* deps.mapping.forSession(id, deps.emit).pipe(Scope.extend(scope))
      yield* SessionReplay.replay({
        records,
        mapper,
        running,
        userMessage: (text) => deps.emit({ sessionId: id, update: { sessionUpdate: "user_message_chunk", content: { type: "text", text } } })
      }).pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
    })

  /** Ids being reopened right now: a second load of one of them waits for nothing and is refused. */
  const reopening = new Set<string>()

  /** `session/load` and `session/resume`: the same session again, under its id. */
  const reopen = (params: SessionWire.LoadSessionParams, withReplay: boolean) =>
    Effect.gen(function*() {
      const id = params.sessionId
      yield* checkId(id)
      if (reopening.has(id)) return yield* Effect.fail(RpcError.internal(`Session ${id} is being loaded by an earlier request; try again when it has answered`))
      reopening.add(id)
      return yield* reopenOnce(params, withReplay).pipe(Effect.ensuring(Effect.sync(() => reopening.delete(id))))
    })

  const reopenOnce = (params: SessionWire.LoadSessionParams, withReplay: boolean) =>
    Effect.gen(function*() {
      const id = params.sessionId
      const live = sessions.get(id)
      if (live !== undefined) {
        // Open in this process already: its log is complete up to now.
        if (live.cwd !== params.cwd) return yield* Effect.fail(RpcError.invalidParams(`Invalid params: session ${id} belongs to ${live.cwd}, not ${params.cwd}`))
        if (withReplay) {
          // Its cards still running stay open on the client: their next updates come from the live session.
          const recorder = recorders.get(id)
          if (recorder !== undefined) yield* recorder.flush
          yield* replayTo(id, (yield* readLog(id)).records, recorder?.openCalls() ?? [])
        }
        return live
      }
      const parsed = yield* readLog(id)
      yield* checkCwd(id, parsed.header, params.cwd)
      const lock = Store.lockPath(store, id)
      const holder = yield* fromFs(`cannot lock session ${id}`, () => SessionLock.acquire(lock))
      if (holder !== undefined) {
        return yield* Effect.fail(RpcError.internal(`Session ${id} is open in another dsh-acp process (pid ${holder.pid}); close it there first`, { pid: holder.pid }))
      }
      return yield* Effect.gen(function*() {
        const restore = SessionReplay.restoreOf(parsed)
        let cwd = restore.cwd
        if (!fs.existsSync(cwd) || !fs.statSync(cwd).isDirectory()) {
          yield* Effect.logWarning(`session ${id}: its directory ${cwd} is gone; continuing in ${parsed.header.cwd}`)
          cwd = parsed.header.cwd
        }
        if (parsed.header.harness.split(":")[0] !== store.harness.split(":")[0]) {
          yield* Effect.logWarning(`session ${id} ran with the ${parsed.header.harness} harness; it continues with ${store.harness}`)
        }
        if (withReplay) yield* replayTo(id, parsed.records)
        const log = yield* fromFs(`cannot open the log of session ${id}`, () => Store.reopen(store, id))
        const recorder = SessionRecorder.make(deps.harness, {
          log,
          restore: { cwd, memory: restore.memory, callIds: restore.callIds },
          ...(restore.mode === undefined ? {} : { restoreMode: restore.mode }),
          titled: restore.titled,
          onTitle: (title) => sessionInfo(id, title)
        })
        recorders.set(id, recorder)
        const session = persistent(yield* deps.openLive(id, parsed.header.cwd, params.additionalDirectories, recorder.harness), log, recorder, false)
        sessions.set(id, session)
        closedIds.delete(id)
        yield* Effect.logInfo(`session ${id} ${withReplay ? "loaded" : "resumed"} in ${cwd}`)
        return session
      }).pipe(Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => SessionLock.release(lock))))
    })

  const register = Effect.gen(function*() {
    const { peer } = deps
    const whenInitialized = <A>(effect: Effect.Effect<A, RpcError>) =>
      deps.whenInitialized(Effect.flatMap(deps.isV2, (v2) =>
        v2 ? Effect.fail(new RpcError({ code: -32601, message: "Method not found: persisted sessions are served over ACP v1 only" })) : effect))
    for (const [method, withReplay] of [[SessionWire.Method.sessionLoad, true], [SessionWire.Method.sessionResume, false]] as const) {
      yield* peer.handle(method, SessionWire.LoadSessionParams, (params, request) =>
        whenInitialized(Effect.flatMap(reopen(params, withReplay), (session) => {
          request.afterResponse(deps.announce(session))
          // As `session/new` answers: the session's modes, in both forms.
          return Modes.newSessionFields(session.modes)
        })))
    }

    yield* peer.handle(SessionWire.Method.sessionList, SessionWire.ListSessionsParams, (params) =>
      whenInitialized(Effect.gen(function*() {
        const after = params.cursor == null ? undefined : decodeCursor(params.cursor)
        if (params.cursor != null && after === undefined) {
          return yield* Effect.fail(RpcError.invalidParams(`Invalid params: cursor ${JSON.stringify(params.cursor)} is not one this agent gave`))
        }
        const all = yield* fromFs("cannot list sessions", () => Store.list(store, params.cwd ?? undefined))
        const start = after === undefined ? 0 : all.findIndex((e) => e.mtimeMs < after.m || (e.mtimeMs === after.m && e.sessionId > after.id))
        const page = start < 0 ? [] : all.slice(start, start + store.pageSize)
        const more = start >= 0 && start + store.pageSize < all.length
        return {
          sessions: page.map((e) => ({ sessionId: e.sessionId, cwd: e.cwd, title: e.title, updatedAt: e.updatedAt })),
          ...(more ? { nextCursor: encodeCursor(page.at(-1)!) } : {})
        }
      })))

    yield* peer.handle(SessionWire.Method.sessionDelete, SessionWire.DeleteSessionParams, (params) =>
      whenInitialized(Effect.gen(function*() {
        const id = params.sessionId
        yield* checkId(id)
        const live = sessions.get(id)
        if (live === undefined && !Store.exists(store, id)) return yield* Effect.fail(notFound(id))
        const holder = SessionLock.heldBy(Store.lockPath(store, id))
        if (holder !== undefined) {
          return yield* Effect.fail(RpcError.internal(`Session ${id} is open in another dsh-acp process (pid ${holder.pid}); it was not deleted`, { pid: holder.pid }))
        }
        if (live !== undefined) {
          sessions.delete(id)
          closedIds.add(id)
          yield* live.close
        }
        yield* fromFs(`cannot delete session ${id}`, () => {
          Store.remove(store, id)
          fs.rmSync(Store.lockPath(store, id), { force: true })
        })
        yield* Effect.logInfo(`session ${id} deleted`)
        return {}
      })))
  })

  return { create, register }
}
