/**
 * A session's spare namespaces: bwrap and our init started ahead of the calls (bwrap's start-up
 * is most of what a pid namespace costs a call), for the session's current profile (a spare of
 * another profile is never used: see `Prewarm.prewarmedFits`). A scoped resource: closing the
 * session ends them.
 *
 * Two spares, not one: when calls follow each other with no pause (a script, a model issuing
 * several tool calls in a row), the spare started after a call is still setting up its namespace
 * when the next call comes, which then waits for it; with two, each call takes one started a call
 * earlier. (Measured in docs/BENCHMARKS.md, "back to back".)
 *
 * When to start one: a spawn blocks the event loop for a few milliseconds (Node forks itself). After
 * a call, with a spare still in the pool, the refill waits for {@link IDLE_MS} of idle time, so it
 * does not land on a prompt that follows at once; a call that takes the last spare first sends its
 * own namespace the script and then starts the refill, which so overlaps with its command.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as ChildProcess from "./ChildProcess.js"
import { disposePrewarmed, prewarm, type Prewarmed } from "./Prewarm.js"

/** Spares kept per session. */
export const SPARES = 2
/** Idle time after a call before the pool is topped up (when it still holds a spare). */
export const IDLE_MS = 10

export interface SparePool {
  /** The oldest spare (the most likely to be ready), if any; the caller owns it from then on. */
  readonly take: () => Prewarmed | undefined
  /** Tops the pool up for `containment` once the event loop has sent what the last call produced. */
  readonly refillSoon: (containment: ChildProcess.Containment) => Effect.Effect<void>
  /** Ends every spare (they were made for a profile no longer current). */
  readonly dispose: Effect.Effect<void>
}

export const make = (
  file: string,
  args: ReadonlyArray<string>,
  envFor: (containment: ChildProcess.Containment) => Record<string, string>
): Effect.Effect<SparePool, never, Scope.Scope> =>
  Effect.gen(function*() {
    const spares: Array<Prewarmed> = []
    let closed = false
    /** The containment of the latest refill request, and its pending timer. */
    let wanted: ChildProcess.Containment | undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    /** Starts spares up to `upTo` for the wanted containment. */
    const fill = (upTo: number): void => {
      const containment = wanted
      if (closed || containment === undefined || containment._tag !== "PidNamespace") return
      while (spares.length < upTo) {
        const spare = prewarm(containment.bwrap, file, args, envFor(containment), containment.view)
        if (spare === undefined) return
        spares.push(spare)
      }
    }
    const refill = (): void => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      fill(SPARES)
    }
    const dispose = Effect.suspend(() => Effect.forEach(spares.splice(0), disposePrewarmed, { discard: true, concurrency: "unbounded" }))
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        if (timer !== undefined) clearTimeout(timer)
        return dispose
      })
    )
    return {
      take: () => {
        const spare = spares.shift()
        // Runs after the caller has sent its spare the script (the same turn of the event loop);
        // one spare only, the rest waits for idle time (the timer, if pending).
        if (spares.length === 0 && wanted !== undefined) setImmediate(() => fill(1))
        return spare
      },
      refillSoon: (containment) =>
        Effect.sync(() => {
          wanted = containment
          if (spares.length === 0) return void setImmediate(refill)
          if (timer !== undefined) clearTimeout(timer)
          timer = setTimeout(refill, IDLE_MS)
          timer.unref()
        }),
      dispose
    }
  })
