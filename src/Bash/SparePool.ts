/**
 * A session's spare processes: bash's process (and, in a pid namespace, bwrap and our init)
 * started ahead of the calls, for the session's current containment and profile (a spare of
 * another profile is never used: see `Prewarm.prewarmedFits`). A scoped resource: closing the
 * session ends them.
 *
 * When to start one. A spawn blocks the event loop until the child has exec'd (Node forks itself:
 * 6.5-12 ms each on a 2-core machine), so it must never land between a prompt's arrival and its
 * answer when it can be avoided:
 * - in a pid namespace, a call that takes the last spare starts one replacement right after it has
 *   sent its own spare the script, so bwrap's set-up overlaps that command instead of delaying the
 *   next one (see `take`);
 * - otherwise the pool is topped up one spare at a time, each after {@link IDLE_MS} without a
 *   call taking a spare (a call cancels the pending top-up), so a prompt that follows its
 *   predecessor at once, or the session's creation, finds the loop free;
 * Two spares, so that two calls started together (a model's parallel tool calls) both find one.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as ChildProcess from "./ChildProcess.js"
import { disposePrewarmed, prewarm, type Prewarmed } from "./Prewarm.js"

/** Spares kept per session. */
export const SPARES = 2
/** Time without a call taking a spare before each top-up spawn. */
export const IDLE_MS = 10

export interface SparePool {
  /** The oldest spare (the most likely to be ready), if any; the caller owns it from then on. */
  readonly take: () => Prewarmed | undefined
  /** Tops the pool up for `containment`, a spare per idle stretch (see above). */
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
    /** The containment of the latest refill request, and the pending top-up. */
    let wanted: ChildProcess.Containment | undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    const cancelTopUp = (): void => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
    }
    /** Starts one spare for the wanted containment (up to {@link SPARES}); false when none was started. */
    const startOne = (): boolean => {
      if (closed || wanted === undefined || spares.length >= SPARES) return false
      const spare = prewarm(wanted, file, args, envFor(wanted))
      if (spare === undefined) return false
      spares.push(spare)
      return true
    }
    /** One spare after the next idle stretch, then the next, up to {@link SPARES}. */
    const topUpLater = (): void => {
      cancelTopUp()
      if (closed || spares.length >= SPARES) return
      timer = setTimeout(() => {
        timer = undefined
        if (startOne()) topUpLater()
      }, IDLE_MS)
      timer.unref()
    }
    // Also forgets the containment: a top-up due now would start a spare for the old profile.
    const dispose = Effect.suspend(() => {
      cancelTopUp()
      wanted = undefined
      return Effect.forEach(spares.splice(0), disposePrewarmed, { discard: true, concurrency: "unbounded" })
    })
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        cancelTopUp()
        return dispose
      })
    )
    return {
      take: () => {
        cancelTopUp()
        const spare = spares.shift()
        // In a pid namespace, a call that took the last spare starts the next one at once (calls
        // that found none spawn their own): the spawn blocks the loop during this command, but
        // bwrap's namespace set-up (~25 ms of its own) then overlaps it instead of landing on the
        // next call. A process group's spare saves only the fork, which a refill would spend during
        // this very command: it waits for idle time (measured: back to back +6 ms when at once).
        if (spare !== undefined && spares.length === 0 && wanted?._tag === "PidNamespace") setImmediate(startOne)
        return spare
      },
      refillSoon: (containment) =>
        Effect.sync(() => {
          wanted = containment
          topUpLater()
        }),
      dispose
    }
  })
