/**
 * Feeds a bounded Queue from synchronous callbacks (Node `data` events) with backpressure.
 *
 * `push` enqueues at once while there is room and returns `undefined`. When the queue is full it
 * keeps the item (order is preserved), returns a Promise that resolves once everything pending has
 * been enqueued, and the caller pauses its source until then. So a slow consumer slows the command
 * down (its pipe fills and its writes block), as in a terminal, and memory stays bounded.
 * After the queue is shut down (the consumer went away) pending items are dropped and every Promise
 * resolves, so a paused source is never left waiting.
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"

export interface OutputPump<A> {
  readonly push: (item: A) => Promise<void> | undefined
}

/** Where the items go: a bounded queue or mailbox (`unsafeOffer` is false when it is full or done). */
export interface Sink<A> {
  readonly offer: (item: A) => Effect.Effect<boolean>
  readonly unsafeOffer: (item: A) => boolean
}

export const make = <A>(queue: Sink<A>, runtime: Runtime.Runtime<never>): OutputPump<A> => {
  const pending: Array<A> = []
  let waiters: Array<() => void> = []
  let active = false
  const release = () => {
    active = false
    const ws = waiters
    waiters = []
    for (const w of ws) w()
  }
  const loop: Effect.Effect<void> = Effect.gen(function*() {
    while (true) {
      // Between two `yield*` this runs synchronously: the emptiness check and `release` are atomic.
      if (pending.length === 0) return release()
      const next = pending.shift() as A
      yield* queue.offer(next)
    }
  }).pipe(Effect.onExit(() =>
    Effect.sync(() => {
      if (active) {
        pending.length = 0
        release()
      }
    })
  ))
  return {
    push: (item) => {
      if (!active && queue.unsafeOffer(item)) return undefined
      pending.push(item)
      const waiting = new Promise<void>((resolve) => waiters.push(resolve))
      if (!active) {
        active = true
        Runtime.runFork(runtime)(loop)
      }
      return waiting
    }
  }
}
