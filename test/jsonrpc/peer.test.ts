import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../src/Bridge/JsonRpc.js"
import * as Wire from "../../src/Bridge/Wire.js"
import { assertJsonRpcLine, EchoParams, makeHarness, request } from "../support/rpcHarness.js"

/** A peer with `echo` registered and serving. */
const echoHarness = (options: { readonly maxLineBytes?: number } = {}) =>
  Effect.gen(function*() {
    const h = yield* makeHarness(options)
    yield* h.peer.handle("echo", EchoParams, (p) => Effect.succeed({ text: p.text }))
    const fiber = yield* h.start
    return { ...h, fiber }
  })

/** Ends input, waits for the peer, and checks every line it wrote. */
const finish = (h: { end: Effect.Effect<void>; fiber: Fiber.RuntimeFiber<void>; written: () => ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    yield* h.end
    yield* Fiber.join(h.fiber)
    for (const line of h.written()) assertJsonRpcLine(line)
    return h.written()
  })

describe("JsonRpc peer: after the response", () => {
  it.effect("an after-response effect runs once the response is written, and not after a failure", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness({})
      yield* h.peer.handle("make", EchoParams, (p, info) =>
        Effect.sync(() => info.afterResponse(h.peer.notify("made", { text: p.text }))).pipe(
          Effect.zipRight(p.text === "fail" ? Effect.fail(JsonRpc.RpcError.invalidParams("no")) : Effect.succeed({ ok: true }))
        ))
      const fiber = yield* h.start
      yield* h.send(request(1, "make", { text: "a" }))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 1, result: { ok: true } })
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", method: "made", params: { text: "a" } })
      yield* h.send(request(2, "make", { text: "fail" }))
      expect((yield* h.next).error.code).toBe(-32602)
      const written = yield* finish({ ...h, fiber })
      expect(written.filter((l) => l.includes('"made"'))).toHaveLength(1)
    }))
})

describe("JsonRpc peer: errors on the wire", () => {
  it.effect("malformed JSON gets -32700 with id null, and the next request is answered", () =>
    Effect.gen(function*() {
      const h = yield* echoHarness()
      yield* h.send(`{"jsonrpc":"2.0","id":1,"method":"echo"`)
      const err = yield* h.next
      expect(err.id).toBeNull()
      expect(err.error.code).toBe(-32700)
      yield* h.send(request(2, "echo", { text: "after" }))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 2, result: { text: "after" } })
      yield* finish(h)
    }))

  it.effect("things that are not a request, notification or response get -32600", () =>
    Effect.gen(function*() {
      const h = yield* echoHarness()
      const cases: Array<[unknown, unknown]> = [
        [[request(1, "echo", { text: "batched" })], null],
        [[], null],
        [42, null],
        ["just a string", null],
        [null, null],
        [true, null],
        [{ jsonrpc: "2.0", id: 3 }, 3],
        [{ jsonrpc: "1.0", id: 4, method: "echo", params: { text: "x" } }, 4],
        [{ id: 5, method: "echo", params: { text: "x" } }, 5],
        [{ jsonrpc: 2, id: "six", method: "echo" }, "six"],
        [{ jsonrpc: "2.0", id: { nested: 1 }, method: "echo" }, null],
        [{ jsonrpc: "2.0", id: 8, method: 8 }, 8],
        [{ jsonrpc: "2.0", id: 9, method: "echo", params: "text" }, 9],
        [{ jsonrpc: "2.0", id: 10, method: "echo", result: 1 }, 10],
        [{ jsonrpc: "2.0", method: "note", params: 3 }, null]
      ]
      for (const [msg, id] of cases) {
        yield* h.send(JSON.stringify(msg))
        const reply = yield* h.next
        expect(reply.error.code, JSON.stringify(msg)).toBe(-32600)
        expect(reply.id, JSON.stringify(msg)).toEqual(id)
      }
      yield* h.send(request(11, "echo", { text: "still here" }))
      expect((yield* h.next).result).toEqual({ text: "still here" })
      const lines = yield* finish(h)
      expect(lines.length).toBe(cases.length + 1)
    }))

  it.effect("an unknown method gets -32601; an unknown notification gets nothing", () =>
    Effect.gen(function*() {
      const h = yield* echoHarness()
      yield* h.send({ jsonrpc: "2.0", method: "no/such/notification", params: { a: 1 } })
      yield* h.send({ jsonrpc: "2.0", method: "_zed/whatever" })
      yield* h.send(request("q", "no/such/method", {}))
      const reply = yield* h.next
      expect(reply.id).toBe("q")
      expect(reply.error.code).toBe(-32601)
      expect(reply.error.message).toContain("no/such/method")
      const lines = yield* finish(h)
      expect(lines.length).toBe(1)
    }))

  it.effect("params failing the Schema get -32602 naming the field", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness()
      yield* h.peer.handle("session/new", Wire.NewSessionParams, (p) => Effect.succeed({ sessionId: p.cwd }))
      const fiber = yield* h.start
      yield* h.send(request(1, "session/new", { cwd: "relative/dir", mcpServers: [] }))
      const relative = yield* h.next
      expect(relative.error.code).toBe(-32602)
      expect(relative.error.message).toMatch(/cwd: Expected an absolute path/)
      yield* h.send(request(2, "session/new", { mcpServers: [] }))
      const missing = yield* h.next
      expect(missing.error.code).toBe(-32602)
      expect(missing.error.message).toContain("cwd: is missing")
      yield* h.send(request(3, "session/new", { cwd: "/tmp", mcpServers: [], somethingNew: { x: 1 }, _meta: { a: 1 } }))
      expect((yield* h.next).result).toEqual({ sessionId: "/tmp" })
      yield* finish({ ...h, fiber })
    }))

  it.effect("a handler defect gets -32603 without a stack, and the peer keeps serving", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness()
      yield* h.peer.handle("boom", Schema.Unknown, () => Effect.die(new Error("kaboom\nsecond line")))
      yield* h.peer.handle("throw", Schema.Unknown, (): Effect.Effect<never> => {
        throw new Error("thrown while building")
      })
      yield* h.peer.handle("echo", EchoParams, (p) => Effect.succeed(p.text))
      const fiber = yield* h.start
      yield* h.send(request(1, "boom", {}))
      const boom = yield* h.next
      expect(boom.error).toEqual({ code: -32603, message: "Internal error: kaboom" })
      yield* h.send(request(2, "throw", {}))
      const thrown = yield* h.next
      expect(thrown.error.code).toBe(-32603)
      expect(thrown.error.message).toContain("thrown while building")
      yield* h.peer.handle("interrupted", Schema.Unknown, () => Effect.interrupt)
      yield* h.send(request(4, "interrupted", {}))
      expect((yield* h.next).error).toEqual({ code: -32800, message: "Request cancelled" })
      yield* h.send(request(3, "echo", { text: "alive" }))
      expect((yield* h.next).result).toBe("alive")
      yield* finish({ ...h, fiber })
    }).pipe(Logger.withMinimumLogLevel(LogLevel.None)))

  it.effect("a handler can fail with a specific code and data", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness()
      yield* h.peer.handle("session/prompt", Wire.PromptParams, (p) =>
        Effect.fail(JsonRpc.RpcError.resourceNotFound("Resource not found", { sessionId: p.sessionId })))
      yield* h.peer.handle("authenticate", Wire.AuthenticateParams, () => Effect.fail(JsonRpc.RpcError.authRequired()))
      const fiber = yield* h.start
      yield* h.send(request(1, "session/prompt", { sessionId: "nope", prompt: [] }))
      expect((yield* h.next).error).toEqual({ code: -32002, message: "Resource not found", data: { sessionId: "nope" } })
      yield* h.send(request(2, "authenticate", { methodId: "x" }))
      expect((yield* h.next).error).toEqual({ code: -32000, message: "Authentication required" })
      yield* finish({ ...h, fiber })
    }))
})

describe("JsonRpc peer: ids and notifications", () => {
  it.effect("string and number ids are echoed exactly", () =>
    Effect.gen(function*() {
      const h = yield* echoHarness()
      const ids = [0, 1, -7, 2 ** 53 - 1, 1.5, "", "abc", "42", "ünï ☃", null]
      for (const id of ids) {
        yield* h.send(request(id, "echo", { text: `for ${String(id)}` }))
        const reply = yield* h.next
        expect(reply.id).toStrictEqual(id)
        expect(reply.result).toEqual({ text: `for ${String(id)}` })
      }
      yield* finish(h)
    }))

  it.effect("notifications reach their handler in order and are never answered", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness()
      const seen: Array<string> = []
      yield* h.peer.onNotification("session/cancel", Wire.CancelParams, (p) => Effect.sync(() => seen.push(p.sessionId)))
      yield* h.peer.handle("seen", Schema.Unknown, () => Effect.sync(() => [...seen]))
      const fiber = yield* h.start
      yield* h.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "a" } })
      yield* h.send({ jsonrpc: "2.0", method: "session/cancel", params: { wrong: 1 } })
      yield* h.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "b" } })
      yield* h.send(request(1, "seen"))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 1, result: ["a", "b"] })
      const lines = yield* finish({ ...h, fiber })
      expect(lines.length).toBe(1)
    }).pipe(Logger.withMinimumLogLevel(LogLevel.None)))

  it.effect("outgoing notify writes a notification line", () =>
    Effect.gen(function*() {
      const h = yield* echoHarness()
      yield* h.peer.notify("session/update", { sessionId: "s", update: { sessionUpdate: "agent_message_chunk" } })
      expect(yield* h.next).toEqual({
        jsonrpc: "2.0",
        method: "session/update",
        params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk" } }
      })
      yield* finish(h)
    }))
})

describe("JsonRpc peer: line limit", () => {
  it.effect("a line over the limit is rejected and the following line is served", () =>
    Effect.gen(function*() {
      const h = yield* echoHarness({ maxLineBytes: 100 })
      const big = JSON.stringify(request(1, "echo", { text: "x".repeat(500) }))
      // Delivered in pieces, the way a pipe would: the limit must not depend on chunking.
      for (let i = 0; i < big.length; i += 37) yield* h.sendRaw(big.slice(i, i + 37))
      yield* h.sendRaw("\n")
      const reply = yield* h.next
      expect(reply.id).toBeNull()
      expect(reply.error.code).toBe(-32600)
      expect(reply.error.message).toContain("100-byte line limit")
      yield* h.send(request(2, "echo", { text: "small" }))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 2, result: { text: "small" } })
      const lines = yield* finish(h)
      expect(lines.length).toBe(2)
    }).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
})

describe("JsonRpc peer: outgoing requests", () => {
  it.effect("a request is resolved by its response; an error response fails it; unknown ids are ignored", () => {
    const logs: Array<string> = []
    const logger = Logger.make(({ message }) => {
      logs.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
    })
    return Effect.gen(function*() {
      const h = yield* echoHarness()
      const first = yield* Effect.fork(h.peer.request("session/request_permission", { sessionId: "s" }))
      const sent = yield* h.next
      expect(sent.method).toBe("session/request_permission")
      expect(sent.params).toEqual({ sessionId: "s" })
      expect(typeof sent.id).toBe("number")
      yield* h.send({ jsonrpc: "2.0", id: 999_999, result: "stray" })
      yield* h.send({ jsonrpc: "2.0", id: sent.id, result: { outcome: { outcome: "selected", optionId: "allow" } } })
      expect(yield* Fiber.join(first)).toEqual({ outcome: { outcome: "selected", optionId: "allow" } })

      const second = yield* Effect.fork(h.peer.request("fs/read_text_file", { path: "/x" }))
      const sent2 = yield* h.next
      expect(sent2.id).not.toBe(sent.id)
      yield* h.send({ jsonrpc: "2.0", id: sent2.id, error: { code: -32002, message: "Resource not found", data: { uri: "/x" } } })
      const failed = yield* Fiber.join(second).pipe(Effect.flip)
      expect(failed).toBeInstanceOf(JsonRpc.RpcError)
      expect({ code: failed.code, message: failed.message, data: failed.data }).toEqual({
        code: -32002,
        message: "Resource not found",
        data: { uri: "/x" }
      })

      // An interrupted request forgets its id: its late response is treated as unknown.
      const third = yield* Effect.fork(h.peer.request("session/request_permission", {}))
      const sent3 = yield* h.next
      yield* Fiber.interrupt(third)
      yield* h.send({ jsonrpc: "2.0", id: sent3.id, result: "late" })
      yield* h.send(request("sync", "echo", { text: "barrier" }))
      expect((yield* h.next).id).toBe("sync")
      const lines = yield* finish(h)
      expect(lines.length).toBe(4)
      expect(logs.filter((l) => l.includes("unknown request id"))).toEqual([
        "response to unknown request id 999999",
        `response to unknown request id ${sent3.id}`
      ])
    }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
  })
})

describe("JsonRpc peer: concurrency and shutdown", () => {
  it.effect("a slow handler does not block a fast one", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness()
      const release = yield* Deferred.make<void>()
      yield* h.peer.handle("slow", Schema.Unknown, () => Deferred.await(release).pipe(Effect.as("slow done")))
      yield* h.peer.handle("fast", Schema.Unknown, () => Effect.succeed("fast done"))
      const fiber = yield* h.start
      yield* h.send(request(1, "slow", {}))
      yield* h.send(request(2, "fast", {}))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 2, result: "fast done" })
      yield* Deferred.succeed(release, undefined)
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 1, result: "slow done" })
      yield* finish({ ...h, fiber })
    }))

  it.live("EOF waits for in-flight handlers to answer before serve completes", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness()
      const started = yield* Deferred.make<void>()
      yield* h.peer.handle("slow", Schema.Unknown, () =>
        Deferred.succeed(started, undefined).pipe(Effect.zipRight(Effect.sleep("50 millis")), Effect.as("answered")))
      const fiber = yield* h.start
      yield* h.send(request(1, "slow", {}))
      yield* Deferred.await(started)
      yield* h.end
      yield* Fiber.join(fiber)
      expect(h.written()).toEqual([JSON.stringify({ jsonrpc: "2.0", id: 1, result: "answered" })])
    }))

  it.effect("at EOF a handler waiting on the other side gets a closed-connection error and still answers", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness()
      yield* h.peer.handle("session/prompt", Schema.Unknown, () =>
        h.peer.request("session/request_permission", {}).pipe(
          Effect.as("permission granted"),
          Effect.catchTag("RpcError", (e) => Effect.succeed(`no permission: ${e.message}`))
        ))
      const fiber = yield* h.start
      yield* h.send(request(1, "session/prompt", {}))
      const asked = yield* h.next
      expect(asked.method).toBe("session/request_permission")
      yield* h.end
      yield* Fiber.join(fiber)
      const answer = assertJsonRpcLine(h.written()[1]!)
      expect(answer.id).toBe(1)
      expect(answer.result).toMatch(/^no permission: Connection closed/)
      // After the input ended, new requests fail at once instead of hanging.
      const late = yield* h.peer.request("x", {}).pipe(Effect.either)
      expect(Either.isLeft(late)).toBe(true)
    }))

  it.effect("$/cancel_request interrupts the handler and answers -32800", () =>
    Effect.gen(function*() {
      const h = yield* makeHarness()
      const interrupted = yield* Deferred.make<void>()
      yield* h.peer.handle("forever", Schema.Unknown, () =>
        Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))))
      const fiber = yield* h.start
      yield* h.send(request("long", "forever", {}))
      yield* h.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: "other" } })
      yield* h.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: "long" } })
      const reply = yield* h.next
      expect(reply.id).toBe("long")
      expect(reply.error.code).toBe(-32800)
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
      yield* finish({ ...h, fiber })
    }))

  it.effect("concurrent writes never interleave within a line", () =>
    Effect.gen(function*() {
      let buffer = ""
      // A writer that yields between characters: without the peer's serialization lines would mix.
      const peer = yield* JsonRpc.make({
        write: (line) =>
          Effect.forEach([...line, "\n"], (c) => Effect.sync(() => { buffer += c }).pipe(Effect.zipRight(Effect.yieldNow())), {
            discard: true
          })
      })
      yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        (i) => peer.notify("session/update", { n: i, text: "y".repeat(i * 3) }),
        { concurrency: "unbounded", discard: true }
      )
      const lines = buffer.split("\n").filter((l) => l.length > 0)
      expect(lines.length).toBe(20)
      expect(lines.map((l) => assertJsonRpcLine(l).params.n).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, i) => i)
      )
    }))

  it.effect("serve reads CRLF lines and a last line without a newline", () =>
    Effect.gen(function*() {
      const written: Array<string> = []
      const peer = yield* JsonRpc.make({ write: (line) => Effect.sync(() => written.push(line)) })
      yield* peer.handle("echo", EchoParams, (p) => Effect.succeed(p.text))
      const lines = `${JSON.stringify(request(1, "echo", { text: "crlf" }))}\r\n\n   \n${JSON.stringify(request(2, "echo", { text: "last" }))}`
      yield* peer.serve(Stream.make(new TextEncoder().encode(lines)))
      expect(written.map((l) => JSON.parse(l).result).sort()).toEqual(["crlf", "last"])
    }))
})
