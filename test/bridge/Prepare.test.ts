/**
 * `Harness.prepare`: the agent starts what the first session will wait for (the bwrap probe) once
 * `initialize` has been answered, never before the answer has been written, and stops it when the
 * connection ends.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Server from "../../src/Bridge/Server.js"
import { Harness } from "../../src/Harness/Harness.js"

const initialize = (id: number) =>
  `${JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } })}\n`

describe("Harness.prepare", () => {
  it.effect("runs once initialize's answer has been written", () =>
    Effect.gen(function*() {
      const input = yield* Queue.unbounded<string | null>()
      const written: Array<string> = []
      // What was written when each prepare ran.
      const seenByPrepare: Array<ReadonlyArray<string>> = []
      const prepared = yield* Deferred.make<void>()
      const harness = Layer.succeed(Harness, Harness.of({
        prepare: Effect.sync(() => seenByPrepare.push([...written])).pipe(Effect.zipRight(Deferred.succeed(prepared, undefined))),
        openSession: () => Effect.die("no session in this test")
      }))
      const serving = yield* Server.serve({
        input: Stream.fromQueue(input).pipe(Stream.takeWhile((x): x is string => x !== null)),
        write: (line) => Effect.sync(() => void written.push(line)),
        agentInfo: { name: "test", title: "Test", version: "0" }
      }).pipe(Effect.provide(harness), Effect.fork)

      yield* Queue.offer(input, initialize(1))
      yield* Deferred.await(prepared)
      expect(seenByPrepare).toHaveLength(1)
      expect(seenByPrepare[0]!.map((line) => JSON.parse(line).id)).toEqual([1])

      yield* Queue.offer(input, null)
      yield* Fiber.join(serving)
      expect(seenByPrepare).toHaveLength(1)
    }))

  it.effect("ends with the connection: a prepare still running is interrupted when the input ends", () =>
    Effect.gen(function*() {
      const input = yield* Queue.unbounded<string | null>()
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const harness = Layer.succeed(Harness, Harness.of({
        prepare: Deferred.succeed(started, undefined).pipe(
          Effect.zipRight(Effect.never),
          Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
        ),
        openSession: () => Effect.die("no session in this test")
      }))
      const serving = yield* Server.serve({
        input: Stream.fromQueue(input).pipe(Stream.takeWhile((x): x is string => x !== null)),
        write: () => Effect.void,
        agentInfo: { name: "test", title: "Test", version: "0" }
      }).pipe(Effect.provide(harness), Effect.fork)
      yield* Queue.offer(input, initialize(1))
      yield* Deferred.await(started)
      yield* Queue.offer(input, null)
      yield* Fiber.join(serving)
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
    }))

  it.effect("a harness without prepare serves as before", () =>
    Effect.gen(function*() {
      const input = yield* Queue.unbounded<string | null>()
      const written: Array<string> = []
      const harness = Layer.succeed(Harness, Harness.of({ openSession: () => Effect.die("no session in this test") }))
      yield* Queue.offerAll(input, [initialize(7), null])
      yield* Server.serve({
        input: Stream.fromQueue(input).pipe(Stream.takeWhile((x): x is string => x !== null)),
        write: (line) => Effect.sync(() => void written.push(line)),
        agentInfo: { name: "test", title: "Test", version: "0" }
      }).pipe(Effect.provide(harness))
      expect(written.map((line) => JSON.parse(line))).toMatchObject([{ id: 7, result: { protocolVersion: 1 } }])
    }))
})
