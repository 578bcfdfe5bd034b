/**
 * Garbage in, protocol out: whatever lines precede it, a valid request gets its correct answer,
 * every output line is a JSON-RPC response, and each garbage line gets exactly the error its kind
 * calls for (or nothing, for notifications and stray responses).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { assertJsonRpcLine, EchoParams, makeHarness, type Message } from "../support/rpcHarness.js"

const fc = FastCheck

type Id = string | number
/** A garbage line, built around the id the test assigns, and the reply it must get (`undefined`: none). */
interface Case {
  readonly kind: string
  readonly line: (id: Id) => string
  readonly expected: (id: Id) => { readonly id: Id | null; readonly code: number } | undefined
}

const parses = (s: string) => {
  try {
    JSON.parse(s)
    return true
  } catch {
    return false
  }
}
const noLineBreak = (s: string) => !/[\r\n]/.test(s)
const notBlank = (s: string) => s.replace(/[ \t]/g, "").length > 0
const isPlainObject = (u: unknown) => typeof u === "object" && u !== null && !Array.isArray(u)

const notJson: FastCheck.Arbitrary<Case> = fc
  .oneof(fc.string({ maxLength: 40 }), fc.fullUnicodeString({ maxLength: 20 }), fc.constantFrom("{", "}", "[", "nul", "tru", "{'a':1}", "{\"a\":}"))
  .filter((s) => noLineBreak(s) && notBlank(s) && !parses(s))
  .map((s) => ({ kind: "not JSON", line: () => s, expected: () => ({ id: null, code: -32700 }) }))

const truncated: FastCheck.Arbitrary<Case> = fc
  .tuple(fc.jsonValue({ maxDepth: 2 }), fc.double({ min: 0, max: 1, noNaN: true }))
  .map(([params, cut]) => ({
    kind: "truncated JSON",
    line: (id) => {
      const full = JSON.stringify({ jsonrpc: "2.0", id, method: "echo", params })
      return full.slice(0, 1 + Math.floor(cut * (full.length - 2)))
    },
    expected: () => ({ id: null, code: -32700 })
  }))

const notAnObject: FastCheck.Arbitrary<Case> = fc
  .jsonValue({ maxDepth: 2 })
  .filter((v) => !isPlainObject(v))
  .map((v) => ({ kind: "not an object", line: () => JSON.stringify(v), expected: () => ({ id: null, code: -32600 }) }))

const badVersion: FastCheck.Arbitrary<Case> = fc
  .option(fc.oneof(fc.constantFrom("1.0", "2", "2.0 ", ""), fc.integer(), fc.boolean()), { nil: undefined })
  .map((jsonrpc) => ({
    kind: "bad jsonrpc",
    line: (id) => JSON.stringify({ ...(jsonrpc === undefined ? {} : { jsonrpc }), id, method: "echo", params: { text: "x" } }),
    expected: (id) => ({ id, code: -32600 })
  }))

const noMethod: FastCheck.Arbitrary<Case> = fc
  .dictionary(fc.string({ maxLength: 6 }).filter((k) => !["method", "result", "error", "id", "jsonrpc"].includes(k)), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 })
  .map((extra) => ({
    kind: "neither request nor response",
    line: (id) => JSON.stringify({ ...extra, jsonrpc: "2.0", id }),
    expected: (id) => ({ id, code: -32600 })
  }))

const unknownMethod: FastCheck.Arbitrary<Case> = fc
  .string({ maxLength: 20 })
  .filter((m) => m !== "echo")
  .map((method) => ({
    kind: "unknown method",
    line: (id) => JSON.stringify({ jsonrpc: "2.0", id, method, params: {} }),
    expected: (id) => ({ id, code: -32601 })
  }))

const badParams: FastCheck.Arbitrary<Case> = fc
  .oneof(
    fc.jsonValue({ maxDepth: 2 }).filter((v) => typeof v !== "string").map((text) => ({ text })),
    fc.constant({}),
    fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 })
  )
  .map((params) => ({
    kind: "invalid params",
    line: (id) => JSON.stringify({ jsonrpc: "2.0", id, method: "echo", params }),
    expected: (id) => ({ id, code: -32602 })
  }))

const notification: FastCheck.Arbitrary<Case> = fc
  .tuple(fc.string({ maxLength: 20 }).filter((m) => m !== "$/cancel_request"), fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }))
  .map(([method, params]) => ({
    kind: "notification",
    line: () => JSON.stringify({ jsonrpc: "2.0", method, params }),
    expected: () => undefined
  }))

const strayResponse: FastCheck.Arbitrary<Case> = fc
  .tuple(fc.oneof(fc.integer({ min: 1_000_000 }), fc.string()), fc.jsonValue({ maxDepth: 1 }), fc.boolean())
  .map(([rid, value, asError]) => ({
    kind: "stray response",
    line: () =>
      JSON.stringify(asError ? { jsonrpc: "2.0", id: rid, error: { code: -1, message: "no" } } : { jsonrpc: "2.0", id: rid, result: value }),
    expected: () => undefined
  }))

const garbage = fc.oneof(notJson, truncated, notAnObject, badVersion, noMethod, unknownMethod, badParams, notification, strayResponse)

const NUM_RUNS = 300
const key = (r: { id: unknown; code: number }) => `${JSON.stringify(r.id)} ${r.code}`

describe("JsonRpc peer fuzz", () => {
  it.effect.prop(
    "a valid request after garbage lines always gets its answer; garbage gets the right error",
    {
      cases: fc.array(garbage, { minLength: 1, maxLength: 8 }),
      text: fc.fullUnicodeString({ maxLength: 30 }),
      chunk: fc.integer({ min: 1, max: 64 }),
      numericIds: fc.boolean()
    },
    ({ cases, chunk, numericIds, text }) =>
      Effect.gen(function*() {
        const h = yield* makeHarness()
        yield* h.peer.handle("echo", EchoParams, (p) => Effect.succeed({ text: p.text }))
        const fiber = yield* h.start
        const ids: Array<Id> = cases.map((_, i) => (numericIds ? i : `g${i}`))
        const input = cases.map((c, i) => c.line(ids[i]!) + "\n").join("") +
          JSON.stringify({ jsonrpc: "2.0", id: "final", method: "echo", params: { text } }) + "\n"
        // Delivered as bytes in arbitrary pieces, as a pipe may (splitting UTF-8 sequences too).
        const bytes = new TextEncoder().encode(input)
        for (let i = 0; i < bytes.length; i += chunk) yield* h.sendRaw(bytes.slice(i, i + chunk))
        let reply: Message
        do reply = yield* h.next
        while (reply.id !== "final")
        expect(reply).toEqual({ jsonrpc: "2.0", id: "final", result: { text } })
        yield* h.end
        yield* Fiber.join(fiber)

        const responses = h.written().map(assertJsonRpcLine)
        for (const r of responses) expect("method" in r, JSON.stringify(r)).toBe(false)
        const got = responses.filter((r) => r.id !== "final").map((r) => key({ id: r.id, code: r.error?.code }))
        const want = cases.flatMap((c, i) => {
          const e = c.expected(ids[i]!)
          return e === undefined ? [] : [key(e)]
        })
        expect(got.sort(), cases.map((c, i) => `${c.kind}: ${c.line(ids[i]!)}`).join("\n")).toEqual(want.sort())
      }).pipe(Logger.withMinimumLogLevel(LogLevel.None)),
    { fastCheck: { numRuns: NUM_RUNS } }
  )
})
