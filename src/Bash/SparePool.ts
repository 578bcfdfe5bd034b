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
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as ChildProcess from "./ChildProcess.js"
import { disposePrewarmed, prewarm, type Prewarmed } from "./Prewarm.js"

/** Spares kept per session. */
export const SPARES = 2

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
    const refill = (containment: ChildProcess.Containment): void => {
      if (closed || containment._tag !== "PidNamespace") return
      while (spares.length < SPARES) {
        const spare = prewarm(containment.bwrap, file, args, envFor(containment), containment.view)
        if (spare === undefined) return
        spares.push(spare)
      }
    }
    const dispose = Effect.suspend(() => Effect.forEach(spares.splice(0), disposePrewarmed, { discard: true, concurrency: "unbounded" }))
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        return dispose
      })
    )
    return {
      take: () => spares.shift(),
      refillSoon: (containment) => Effect.sync(() => void setImmediate(() => refill(containment))),
      dispose
    }
  })
