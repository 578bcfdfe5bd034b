/**
 * Drives a JSON-RPC peer through in-memory streams: lines in through a queue, every written line
 * recorded and offered to the test in order.
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../src/Bridge/JsonRpc.js"

export type Message = Record<string, any>

/** Throws unless `line` is one JSON-RPC 2.0 message (request, notification, or response). */
export const assertJsonRpcLine = (line: string): Message => {
  if (line.includes("\n")) throw new Error(`output line contains a newline: ${line}`)
  const msg = JSON.parse(line)
  if (typeof msg !== "object" || msg === null || Array.isArray(msg)) throw new Error(`not an object: ${line}`)
  if (msg.jsonrpc !== "2.0") throw new Error(`bad jsonrpc: ${line}`)
  if ("method" in msg) {
    if (typeof msg.method !== "string") throw new Error(`bad method: ${line}`)
    return msg
  }
  const idOk = typeof msg.id === "string" || typeof msg.id === "number" || msg.id === null
  if (!idOk) throw new Error(`bad id: ${line}`)
  if (("result" in msg) === ("error" in msg)) throw new Error(`needs exactly one of result/error: ${line}`)
  if ("error" in msg) {
    const e = msg.error
    if (!Number.isInteger(e?.code) || typeof e?.message !== "string") throw new Error(`bad error: ${line}`)
    if (typeof e.data === "string" && /\n\s+at /.test(e.data)) throw new Error(`stack on the wire: ${line}`)
    if (/\n\s+at /.test(e.message)) throw new Error(`stack on the wire: ${line}`)
  }
  return msg
}

export interface Harness {
  readonly peer: JsonRpc.Peer
  /** Sends an object (serialized) or a raw string, newline added. */
  readonly send: (msg: unknown) => Effect.Effect<void>
  /** Sends a raw chunk, as is (no newline added). */
  readonly sendRaw: (chunk: string | Uint8Array) => Effect.Effect<void>
  /** Ends the input (EOF). */
  readonly end: Effect.Effect<void>
  /** The next written line, parsed and checked. */
  readonly next: Effect.Effect<Message>
  /** Every line written so far. */
  readonly written: () => ReadonlyArray<string>
  readonly start: Effect.Effect<Fiber.RuntimeFiber<void>>
}

export const EchoParams = Schema.Struct({ text: Schema.String })

export const makeHarness = (options: { readonly maxLineBytes?: number } = {}) =>
  Effect.gen(function*() {
    const out = yield* Queue.unbounded<string>()
    const input = yield* Queue.unbounded<string | Uint8Array | null>()
    const written: Array<string> = []
    const peer = yield* JsonRpc.make({
      write: (line) => Effect.sync(() => written.push(line)).pipe(Effect.zipRight(Queue.offer(out, line))),
      ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes })
    })
    const stream = Stream.fromQueue(input).pipe(
      Stream.takeWhile((x): x is string | Uint8Array => x !== null)
    ) as Stream.Stream<string | Uint8Array>
    const harness: Harness = {
      peer,
      send: (msg) => Queue.offer(input, (typeof msg === "string" ? msg : JSON.stringify(msg)) + "\n"),
      sendRaw: (chunk) => Queue.offer(input, chunk),
      end: Queue.offer(input, null),
      next: Queue.take(out).pipe(Effect.map(assertJsonRpcLine)),
      written: () => written,
      start: Effect.fork(peer.serve(stream))
    }
    return harness
  })

export const request = (id: string | number | null, method: string, params?: unknown) =>
  params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }
