/**
 * Effect makes its default Random and Clock when its modules load: the Random's seed (one
 * `Math.random()`) and the Clock's origin for `currentTimeNanos` (the wall clock minus
 * `process.hrtime` at that moment). In a start from the startup snapshot (scripts/snapshot.mjs)
 * "when its modules load" is the build: every start would draw the same Effect random numbers, and
 * the nanosecond clock would be off by however much the wall clock moved against the monotonic one
 * since the build (a reboot resets the monotonic clock). The command runs its program with both made
 * at start instead, on either path, so the two behave alike.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"

/** A Clock whose nanosecond origin is taken now; sleeping is the default Clock's. */
const clockFromNow = (): Clock.Clock => {
  const base = Clock.make()
  const origin = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint()
  const nanos = () => origin + process.hrtime.bigint()
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => Date.now(),
    currentTimeMillis: Effect.sync(() => Date.now()),
    unsafeCurrentTimeNanos: nanos,
    currentTimeNanos: Effect.sync(nanos),
    sleep: (duration) => base.sleep(duration)
  }
}

/** Runs `program` (and every fiber it forks) with a Random seeded and a Clock set up now. */
export const withFreshServices = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  program.pipe(Effect.withRandom(Random.make(Math.random())), Effect.withClock(clockFromNow()))
