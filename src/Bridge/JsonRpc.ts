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
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import {
  classify,
  ErrorCode,
  errorLine,
  formatParseError,
  idKey,
  type Incoming,
  isId,
  isRecord,
  make_,
  type RequestId,
  resultLine,
  RpcError,
  shortDefect
} from "./JsonRpcMessage.js"
import * as Ndjson from "./Ndjson.js"

// The messages, under the names the agent's modules know them by.
export { ErrorCode, formatParseError, type RequestId, RpcError } from "./JsonRpcMessage.js"

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
  /**
   * Writes one protocol line (without the newline). The peer never calls it concurrently. `flush`:
   * a writer that holds lines back to send them together sends this one (and those before it) now.
   */
  readonly write: (line: string, flush?: boolean) => Effect.Effect<void>
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
  /** `flush`: the peer waits for this one (see {@link PeerOptions.write}). */
  readonly notify: (method: string, params?: unknown, options?: { readonly flush?: boolean }) => Effect.Effect<void>
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
// The peer

type RequestHandler = (params: unknown, info: RequestInfo) => Effect.Effect<unknown, RpcError>
type NotificationHandler = (params: unknown, info: NotificationInfo) => Effect.Effect<void>

export const make = (options: PeerOptions): Effect.Effect<Peer> =>
  Effect.gen(function*() {
    const maxLineBytes = options.maxLineBytes ?? Ndjson.DEFAULT_MAX_LINE_BYTES
    const writeLock = yield* Effect.makeSemaphore(1)
    const write = (line: string, flush?: boolean) => writeLock.withPermits(1)(options.write(line, flush))

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
        // Compiled at the method's first request: most methods of a session are never called.
        let decode: ((raw: unknown) => Effect.Effect<typeof schema.Type, ParseResult.ParseError, typeof schema.Context>) | undefined
        requestHandlers.set(method, (raw, info) =>
          (decode ??= Schema.decodeUnknown(schema))(raw).pipe(
            Effect.mapError((e) => RpcError.invalidParams(`Invalid params: ${formatParseError(e)}`)),
            Effect.flatMap((params) => handler(params, info)),
            Effect.provide(context)
          ))
      })

    const onNotification: Peer["onNotification"] = (method, schema, handler) =>
      Effect.contextWith((context) => {
        let decode: ((raw: unknown) => Effect.Effect<typeof schema.Type, ParseResult.ParseError, typeof schema.Context>) | undefined
        notificationHandlers.set(method, (raw, info) =>
          (decode ??= Schema.decodeUnknown(schema))(raw).pipe(
            Effect.matchEffect({
              onFailure: (e) => Effect.logWarning(`dropped ${method} notification: ${formatParseError(e)}`),
              onSuccess: (params) => handler(params, info)
            }),
            Effect.provide(context)
          ))
      })

    const notify: Peer["notify"] = (method, params, notifyOptions) =>
      Effect.suspend(() =>
        write(JSON.stringify(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }), notifyOptions?.flush)
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

    // A response is what the other side waits for: it leaves at once (see PeerOptions.write), not
    // after the rest of the run (the request's after-response work, the end of its fiber).
    const answer = (id: RequestId, exit: Exit.Exit<unknown, RpcError>): Effect.Effect<void> => {
      if (Exit.isSuccess(exit)) return write(resultLine(id, exit.value), true)
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure) && failure.value instanceof RpcError) return write(errorLine(id, failure.value), true)
      // A handler that interrupted itself (its work was cancelled from elsewhere) did not crash.
      if (Cause.isInterruptedOnly(exit.cause)) return write(errorLine(id, RpcError.requestCancelled()), true)
      return Effect.logError("request handler died", exit.cause).pipe(
        Effect.zipRight(write(errorLine(id, RpcError.internal(shortDefect(exit.cause))), true))
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
        // The error is made only when a cancel comes: an Error (its stack trace) per request otherwise.
        const cancelled = Deferred.await(cancel).pipe(Effect.zipRight(Effect.failSync(() => RpcError.requestCancelled())))
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
