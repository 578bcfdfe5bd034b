/**
 * A bidirectional JSON-RPC 2.0 peer over NDJSON (one message per line, no batches).
 *
 * ACP needs both directions on one stream: the agent serves `session/prompt` while it sends
 * requests of its own (`session/request_permission`) and notifications (`session/update`), so this
 * is a peer, not a server. Incoming requests run concurrently (a long prompt never blocks
 * `session/cancel` or another session); incoming notifications run in arrival order on the input
 * fiber, so a `session/cancel` is seen before any later line is read (their handlers must be quick).
 * Params are decoded with the method's Schema at the edge; what goes wrong on the wire is answered
 * with the standard codes and never stops the stream.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Ndjson from "./Ndjson.js"

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** ACP: the request was cancelled (`$/cancel_request`, or a handler chose to say so). */
  RequestCancelled: -32800,
  /** ACP: authentication required. */
  AuthRequired: -32000,
  /** ACP: resource (e.g. session) not found. */
  ResourceNotFound: -32002
} as const

/** A JSON-RPC error: what a handler fails with to answer a specific code, and what `request` fails with. */
export class RpcError extends Data.TaggedError("RpcError")<{
  readonly code: number
  readonly message: string
  readonly data?: unknown
}> {
  static invalidParams(message: string, data?: unknown): RpcError {
    return make_(ErrorCode.InvalidParams, message, data)
  }
  static internal(message: string, data?: unknown): RpcError {
    return make_(ErrorCode.InternalError, message, data)
  }
  static requestCancelled(message = "Request cancelled", data?: unknown): RpcError {
    return make_(ErrorCode.RequestCancelled, message, data)
  }
  static authRequired(message = "Authentication required", data?: unknown): RpcError {
    return make_(ErrorCode.AuthRequired, message, data)
  }
  static resourceNotFound(message = "Resource not found", data?: unknown): RpcError {
    return make_(ErrorCode.ResourceNotFound, message, data)
  }
}

const make_ = (code: number, message: string, data: unknown): RpcError =>
  data === undefined ? new RpcError({ code, message }) : new RpcError({ code, message, data })

/** Ids are echoed exactly as received; `null` is legal (if discouraged) in JSON-RPC 2.0. */
export type RequestId = string | number | null

export interface RequestInfo {
  readonly id: RequestId
  readonly method: string
  /**
   * Arrival order among all incoming requests and notifications. Request handlers run on their own
   * fibers while notifications run inline, so a notification read right after a request (e.g.
   * `session/cancel` after `session/prompt`) may run before that request's handler starts: this
   * number says which came first.
   */
  readonly seq: number
  /**
   * Runs `effect` right after this request's response is written, when it succeeded (e.g. a
   * notification about something the response just created, which the client must know first).
   */
  readonly afterResponse: (effect: Effect.Effect<void>) => void
}

export interface NotificationInfo {
  readonly method: string
  /** Arrival order, comparable with {@link RequestInfo.seq}. */
  readonly seq: number
}

export interface PeerOptions {
  /** Writes one protocol line (without the newline). The peer never calls it concurrently. */
  readonly write: (line: string) => Effect.Effect<void>
  /** Longest accepted input line in bytes (default {@link Ndjson.DEFAULT_MAX_LINE_BYTES}). */
  readonly maxLineBytes?: number
}

export interface Peer {
  /**
   * Serves `method` as a request. Absent params decode as `{}`. The handler's requirements are
   * captured from the registering fiber's context, so register inside the layer that provides them.
   */
  readonly handle: <A, I, R>(
    method: string,
    params: Schema.Schema<A, I, never>,
    handler: (params: A, request: RequestInfo) => Effect.Effect<unknown, RpcError, R>
  ) => Effect.Effect<void, never, R>
  /** Handles `method` as a notification; params that fail the Schema are logged and dropped. */
  readonly onNotification: <A, I, R>(
    method: string,
    params: Schema.Schema<A, I, never>,
    handler: (params: A, notification: NotificationInfo) => Effect.Effect<void, never, R>
  ) => Effect.Effect<void, never, R>
  /** Sends a request to the other side; fails with its error response, or when the input ended. Interrupting it forgets the id. */
  readonly request: (method: string, params?: unknown) => Effect.Effect<unknown, RpcError>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
  /**
   * Reads and answers until `input` ends, then fails what is still awaiting a response from the
   * other side and waits for in-flight request handlers to answer. Interrupting it interrupts them.
   */
  readonly serve: <E, R>(input: Stream.Stream<Uint8Array | string, E, R>) => Effect.Effect<void, E, R>
}

/** The peer as a service, for the agent's layers. */
export class JsonRpc extends Context.Tag("dsh-acp/Bridge/JsonRpc")<JsonRpc, Peer>() {
  static readonly layer = (options: PeerOptions): Layer.Layer<JsonRpc> => Layer.effect(JsonRpc, make(options))
}

// ---------------------------------------------------------------------------------------------
// Wire shapes

type Json = unknown

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const isId = (u: unknown): u is RequestId =>
  typeof u === "string" || (typeof u === "number" && Number.isFinite(u)) || u === null

/** What a parsed line is, decided once so every branch below works on a known shape. */
type Incoming =
  | { readonly _tag: "Request"; readonly id: RequestId; readonly method: string; readonly params: Json }
  | { readonly _tag: "Notification"; readonly method: string; readonly params: Json }
  | { readonly _tag: "Response"; readonly id: RequestId; readonly exit: Exit.Exit<Json, RpcError> }
  | { readonly _tag: "Invalid"; readonly id: RequestId; readonly reason: string }

const invalid = (reason: string, id: RequestId = null): Incoming => ({ _tag: "Invalid", id, reason })

const classify = (msg: unknown): Incoming => {
  if (Array.isArray(msg)) return invalid("batches are not supported")
  if (!isRecord(msg)) return invalid(`expected an object, got ${msg === null ? "null" : typeof msg}`)
  const id = "id" in msg && isId(msg.id) ? msg.id : null
  if (msg.jsonrpc !== "2.0") return invalid(`"jsonrpc" must be "2.0"`, id)
  if ("id" in msg && !isId(msg.id)) return invalid(`"id" must be a string, a number or null`)
  if ("method" in msg) {
    if (typeof msg.method !== "string") return invalid(`"method" must be a string`, id)
    const params = msg.params
    if (params !== undefined && typeof params !== "object") {
      return invalid(`"params" must be an object or an array`, id)
    }
    if ("result" in msg || "error" in msg) return invalid(`a request has no "result" or "error"`, id)
    return "id" in msg
      ? { _tag: "Request", id, method: msg.method, params: params ?? {} }
      : { _tag: "Notification", method: msg.method, params: params ?? {} }
  }
  if ("id" in msg && ("result" in msg) !== ("error" in msg)) {
    if ("result" in msg) return { _tag: "Response", id, exit: Exit.succeed(msg.result) }
    const error = msg.error
    if (isRecord(error) && typeof error.code === "number" && typeof error.message === "string") {
      return { _tag: "Response", id, exit: Exit.fail(make_(error.code, error.message, error.data)) }
    }
    return { _tag: "Response", id, exit: Exit.fail(RpcError.internal("Malformed error response", error)) }
  }
  return invalid(`expected a request, a notification or a response`, id)
}

const errorLine = (id: RequestId, error: RpcError): string => {
  const body: Record<string, unknown> = { code: error.code, message: error.message }
  if (error.data !== undefined) body.data = error.data
  try {
    return JSON.stringify({ jsonrpc: "2.0", id, error: body })
  } catch {
    return JSON.stringify({ jsonrpc: "2.0", id, error: { code: error.code, message: error.message } })
  }
}

const resultLine = (id: RequestId, result: unknown): string => {
  try {
    const line = JSON.stringify({ jsonrpc: "2.0", id, result: result === undefined ? null : result })
    if (line !== undefined) return line
  } catch {
    // fall through: a result that does not serialize is our bug, reported as such
  }
  return errorLine(id, RpcError.internal("Internal error: result is not serializable"))
}

/** `cwd: Expected an absolute path; sessionId: is missing` — short enough for an editor's error toast. */
export const formatParseError = (error: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const shown = issues.slice(0, 3).map((issue) =>
    issue.path.length === 0 ? issue.message : `${issue.path.map(String).join(".")}: ${issue.message}`
  )
  if (issues.length > 3) shown.push(`(${issues.length - 3} more)`)
  return shown.join("; ")
}

/** First line of a defect's message, bounded: enough to act on, never a stack. */
const shortDefect = (cause: Cause.Cause<unknown>): string => {
  const squashed = Cause.squash(cause)
  const text = squashed instanceof Error ? squashed.message : String(squashed)
  const first = (text.split("\n")[0] ?? "").slice(0, 200)
  return first.length > 0 ? `Internal error: ${first}` : "Internal error"
}

const idKey = (id: RequestId): string => (typeof id === "string" ? `s:${id}` : `n:${String(id)}`)

// ---------------------------------------------------------------------------------------------
// The peer

type RequestHandler = (params: unknown, info: RequestInfo) => Effect.Effect<unknown, RpcError>
type NotificationHandler = (params: unknown, info: NotificationInfo) => Effect.Effect<void>

export const make = (options: PeerOptions): Effect.Effect<Peer> =>
  Effect.gen(function*() {
    const maxLineBytes = options.maxLineBytes ?? Ndjson.DEFAULT_MAX_LINE_BYTES
    const writeLock = yield* Effect.makeSemaphore(1)
    const write = (line: string) => writeLock.withPermits(1)(options.write(line))

    const requestHandlers = new Map<string, RequestHandler>()
    const notificationHandlers = new Map<string, NotificationHandler>()
    /** Outgoing requests awaiting a response, by the id we allocated. */
    const pending = new Map<number, Deferred.Deferred<unknown, RpcError>>()
    /** Incoming requests in flight, by id, so `$/cancel_request` can reach them. */
    const inFlight = new Map<string, Deferred.Deferred<void>>()
    let nextId = 0
    /** Incoming requests and notifications read so far (see `RequestInfo.seq`). */
    let arrivals = 0
    let closed = false
    let serving = false

    const handle: Peer["handle"] = (method, schema, handler) =>
      Effect.contextWith((context) => {
        const decode = Schema.decodeUnknown(schema)
        requestHandlers.set(method, (raw, info) =>
          decode(raw).pipe(
            Effect.mapError((e) => RpcError.invalidParams(`Invalid params: ${formatParseError(e)}`)),
            Effect.flatMap((params) => handler(params, info)),
            Effect.provide(context)
          ))
      })

    const onNotification: Peer["onNotification"] = (method, schema, handler) =>
      Effect.contextWith((context) => {
        const decode = Schema.decodeUnknown(schema)
        notificationHandlers.set(method, (raw, info) =>
          decode(raw).pipe(
            Effect.matchEffect({
              onFailure: (e) => Effect.logWarning(`dropped ${method} notification: ${formatParseError(e)}`),
              onSuccess: (params) => handler(params, info)
            }),
            Effect.provide(context)
          ))
      })

    const notify: Peer["notify"] = (method, params) =>
      Effect.suspend(() =>
        write(JSON.stringify(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }))
      )

    const request: Peer["request"] = (method, params) =>
      Effect.suspend(() => {
        if (closed) return Effect.fail(RpcError.internal(`Connection closed: cannot send ${method}`))
        const id = nextId++
        let line: string
        try {
          line = JSON.stringify(
            params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }
          )
        } catch (e) {
          return Effect.fail(RpcError.internal(`${method} params are not serializable: ${String(e)}`))
        }
        return Effect.acquireUseRelease(
          Deferred.make<unknown, RpcError>().pipe(Effect.tap((d) => Effect.sync(() => pending.set(id, d)))),
          (deferred) => write(line).pipe(Effect.zipRight(Deferred.await(deferred))),
          () => Effect.sync(() => pending.delete(id))
        )
      })

    const answer = (id: RequestId, exit: Exit.Exit<unknown, RpcError>): Effect.Effect<void> => {
      if (Exit.isSuccess(exit)) return write(resultLine(id, exit.value))
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure) && failure.value instanceof RpcError) return write(errorLine(id, failure.value))
      // A handler that interrupted itself (its work was cancelled from elsewhere) did not crash.
      if (Cause.isInterruptedOnly(exit.cause)) return write(errorLine(id, RpcError.requestCancelled()))
      return Effect.logError("request handler died", exit.cause).pipe(
        Effect.zipRight(write(errorLine(id, RpcError.internal(shortDefect(exit.cause)))))
      )
    }

    /** Registers the request as in flight before it is forked, so a `$/cancel_request` read next finds it. */
    const runRequest = (
      id: RequestId,
      method: string,
      params: unknown,
      handler: RequestHandler
    ): Effect.Effect<Effect.Effect<void>> =>
      Effect.map(Deferred.make<void>(), (cancel) => {
        const key = idKey(id)
        inFlight.set(key, cancel)
        const after: Array<Effect.Effect<void>> = []
        const info: RequestInfo = { id, method, seq: ++arrivals, afterResponse: (effect) => void after.push(effect) }
        return serveRequest(id, key, cancel, info, after, params, handler)
      })

    const serveRequest = (
      id: RequestId,
      key: string,
      cancel: Deferred.Deferred<void>,
      info: RequestInfo,
      after: ReadonlyArray<Effect.Effect<void>>,
      params: unknown,
      handler: RequestHandler
    ): Effect.Effect<void> =>
      Effect.gen(function*() {
        const cancelled = Deferred.await(cancel).pipe(Effect.zipRight(Effect.fail(RpcError.requestCancelled())))
        // `Effect.suspend` turns a handler that throws while building its Effect into a defect.
        const exit = yield* Effect.raceFirst(Effect.suspend(() => handler(params, info)), cancelled).pipe(
          Effect.exit
        )
        if (inFlight.get(key) === cancel) inFlight.delete(key)
        yield* answer(id, exit)
        if (Exit.isSuccess(exit)) {
          yield* Effect.forEach(after, (effect) => Effect.catchAllCause(effect, (cause) => Effect.logError("after-response effect failed", cause)), { discard: true })
        }
      }).pipe(Effect.annotateLogs({ rpcMethod: info.method, rpcId: String(id) }))

    const cancelIncoming = (params: unknown): Effect.Effect<void> =>
      Effect.suspend(() => {
        const requestId = isRecord(params) && isId(params.requestId) ? params.requestId : undefined
        const deferred = requestId === undefined ? undefined : inFlight.get(idKey(requestId))
        return deferred === undefined ? Effect.void : Deferred.succeed(deferred, undefined)
      })

    const onMessage = (msg: Incoming, fibers: FiberSet.FiberSet<void, never>): Effect.Effect<void> => {
      switch (msg._tag) {
        case "Invalid":
          return Effect.logWarning(`invalid message: ${msg.reason}`).pipe(
            Effect.zipRight(write(errorLine(msg.id, make_(ErrorCode.InvalidRequest, `Invalid request: ${msg.reason}`, undefined))))
          )
        case "Request": {
          const handler = requestHandlers.get(msg.method)
          if (handler === undefined) {
            return write(errorLine(msg.id, make_(ErrorCode.MethodNotFound, `Method not found: ${msg.method}`, undefined)))
          }
          return runRequest(msg.id, msg.method, msg.params, handler).pipe(
            Effect.flatMap((serve) => FiberSet.run(fibers, serve)),
            Effect.asVoid
          )
        }
        case "Notification": {
          const builtin = msg.method === "$/cancel_request" ? cancelIncoming(msg.params) : Effect.void
          const handler = notificationHandlers.get(msg.method)
          const run = handler === undefined ? Effect.void : Effect.suspend(() => handler(msg.params, { method: msg.method, seq: ++arrivals })).pipe(
            Effect.catchAllCause((cause) => Effect.logError(`${msg.method} notification handler died`, cause))
          )
          return Effect.zipRight(builtin, run)
        }
        case "Response": {
          const deferred = typeof msg.id === "number" ? pending.get(msg.id) : undefined
          if (deferred === undefined) return Effect.logWarning(`response to unknown request id ${JSON.stringify(msg.id)}`)
          pending.delete(msg.id as number)
          return Deferred.done(deferred, msg.exit).pipe(Effect.asVoid)
        }
      }
    }

    const onFrame = (frame: Ndjson.Frame, fibers: FiberSet.FiberSet<void, never>): Effect.Effect<void> => {
      switch (frame._tag) {
        case "Overlong":
          return Effect.logWarning(`input line over ${frame.maxLineBytes} bytes skipped`).pipe(
            Effect.zipRight(write(errorLine(null, make_(
              ErrorCode.InvalidRequest,
              `Invalid request: message exceeds the ${frame.maxLineBytes}-byte line limit`,
              undefined
            ))))
          )
        case "Undecodable":
          return write(errorLine(null, make_(ErrorCode.ParseError, "Parse error: line is not valid UTF-8", undefined)))
        case "Line": {
          let parsed: unknown
          try {
            parsed = JSON.parse(frame.line)
          } catch (e) {
            const reason = e instanceof Error ? e.message : String(e)
            return write(errorLine(null, make_(ErrorCode.ParseError, `Parse error: ${reason}`, undefined)))
          }
          return onMessage(classify(parsed), fibers)
        }
      }
    }

    /** The other side can no longer answer: fail what waits on it, so handlers blocked on a request can finish. */
    const closePending = Effect.suspend(() => {
      closed = true
      const waiting = [...pending.values()]
      pending.clear()
      return Effect.forEach(
        waiting,
        (d) => Deferred.fail(d, RpcError.internal("Connection closed before the response arrived")),
        { discard: true }
      )
    })

    const serve: Peer["serve"] = (input) =>
      Effect.scoped(
        Effect.gen(function*() {
          if (serving) return yield* Effect.dieMessage("JsonRpc peer: serve called twice")
          serving = true
          const fibers = yield* FiberSet.make<void, never>()
          yield* input.pipe(
            Ndjson.frames(maxLineBytes),
            Stream.runForEach((frame) => onFrame(frame, fibers))
          ).pipe(Effect.ensuring(closePending))
          yield* FiberSet.awaitEmpty(fibers)
        })
      )

    return { handle, onNotification, request, notify, serve } satisfies Peer
  })
