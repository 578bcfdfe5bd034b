/**
 * The live output of one v2 terminal: raw bytes in, base64 `terminal_output_chunk`s out, coalesced
 * like the v1 card (leading edge, then at most one chunk per `coalesceMs`). Bytes are concatenated
 * and encoded once per chunk, so a flood costs one small array push per pipe read; each chunk is
 * encoded on its own, so a client decodes each and appends the bytes (a UTF-8 character may span
 * two chunks: bytes are faithful, text is the client's business).
 *
 * Every method runs under the session mapper's lock; the timer takes the lock itself.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import type { SessionUpdate } from "./SessionUpdate.js"

export interface StreamContext {
  readonly lock: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
  readonly send: (update: SessionUpdate) => Effect.Effect<void>
  readonly coalesceMs: number
  /** `false`: everything waits for `close` (the `--no-live-output` mode). */
  readonly liveOutput: boolean
  readonly timers: FiberSet.FiberSet<void, never>
}

export class TerminalStream {
  private pending: Array<Uint8Array> = []
  private lastEmitAt = Number.NEGATIVE_INFINITY
  private timer: Fiber.RuntimeFiber<void> | undefined
  private closed = false

  constructor(readonly terminalId: string, private readonly context: StreamContext) {}

  /** Takes bytes to show; sends them now or when the coalescing window ends. */
  push(bytes: Uint8Array): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.closed || bytes.length === 0) return Effect.void
      this.pending.push(bytes)
      if (!this.context.liveOutput || this.timer !== undefined) return Effect.void
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const wait = this.lastEmitAt + this.context.coalesceMs - now
        if (wait <= 0) return this.flush
        const fire = this.context.lock(Effect.suspend(() => {
          this.timer = undefined
          return this.closed ? Effect.void : this.flush
        }))
        return Effect.map(FiberSet.run(this.context.timers, Effect.zipRight(Effect.sleep(wait), fire)), (fiber) => {
          this.timer = fiber
        })
      })
    })
  }

  /** Sends what is pending now. */
  get flush(): Effect.Effect<void> {
    return Effect.suspend(() => {
      const timer = this.timer
      this.timer = undefined
      const stop = timer === undefined ? Effect.void : Fiber.interruptFork(timer)
      if (this.pending.length === 0) return stop
      const bytes = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending)
      this.pending = []
      return stop.pipe(
        Effect.zipRight(Clock.currentTimeMillis),
        Effect.flatMap((now) => {
          this.lastEmitAt = now
          return this.context.send({
            sessionUpdate: "terminal_output_chunk",
            terminalId: this.terminalId,
            data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")
          })
        })
      )
    })
  }

  /** Sends the rest; later bytes are dropped (the terminal has exited). */
  get close(): Effect.Effect<void> {
    return Effect.suspend(() => {
      const rest = this.flush
      this.closed = true
      return rest
    })
  }
}
