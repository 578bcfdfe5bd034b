/**
 * How commands are contained, decided once per executor: process groups or a bwrap pid namespace
 * (`DSH_ACP_CONTAINMENT`, or a probe), and whether bwrap can also make the sandbox profiles here.
 * Both answers are lazy (they start when the agent has answered \`initialize\` — \`Bash.prepare\` — or
 * with the first session, so the agent's start is not delayed) and logged once. Under `auto` one bwrap run usually gives both (see {@link probeContainment}).
 */
import * as os from "node:os"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import type { ContainmentMode } from "./Bash.js"
import * as ChildProcess from "./ChildProcess.js"
import * as Sandbox from "./Sandbox.js"

/**
 * `effect` run at most once, when first awaited, its answer shared. The probe spawns bwrap (~4-5 ms
 * of CPU), which would delay the answer to `initialize`: it starts after it (`prepare`) or with the
 * first session. It
 * runs in a daemon fiber and answers through a Deferred, so a caller interrupted while waiting never
 * leaves an interrupted result behind for later callers; the flag is set in the same
 * uninterruptible step that forks it, so there is exactly one run and it always answers.
 */
const lazyOnce = <A>(effect: Effect.Effect<A>): Effect.Effect<Effect.Effect<A>> =>
  Effect.sync(() => {
    const answer = Deferred.unsafeMake<A>(FiberId.none)
    let started = false
    const start = Effect.uninterruptible(Effect.suspend(() => {
      if (started) return Effect.void
      started = true
      return Effect.asVoid(Effect.forkDaemon(Effect.intoDeferred(effect, answer)))
    }))
    return Effect.zipRight(start, Deferred.await(answer))
  })

const CONTAINMENT_MODES: ReadonlyArray<ContainmentMode> = ["auto", "bwrap", "process-group"]

/** `DSH_ACP_CONTAINMENT` (`auto` | `bwrap` | `process-group`), used when the config does not say. */
export const containmentFromEnv = (env: Readonly<Record<string, string | undefined>> = process.env): ContainmentMode | undefined => {
  const value = env.DSH_ACP_CONTAINMENT
  return CONTAINMENT_MODES.includes(value as ContainmentMode) ? value as ContainmentMode : undefined
}

const pidNamespace: ChildProcess.Containment = { _tag: "PidNamespace", bwrap: "bwrap" }

/**
 * The containment for a mode, logged once. `"auto"` probes bwrap lazily, in the background, from
 * `prepare` or the first session's opening, so the agent's start is not delayed; a command waits
 * for the answer.
 */
export const resolveContainment = (mode: ContainmentMode): Effect.Effect<Effect.Effect<ChildProcess.Containment>> => {
  switch (mode) {
    case "process-group":
      return Effect.logInfo("containment: process groups (configured)").pipe(Effect.as(Effect.succeed(ChildProcess.processGroup)))
    case "bwrap":
      return Effect.logInfo("containment: bwrap pid namespace (configured)").pipe(Effect.as(Effect.succeed(pidNamespace)))
    case "auto":
      return lazyOnce(probeContainment())
  }
}

/**
 * The sandbox verdict the `auto` probe reached for the containment value it made, and the writable
 * directory it bound to reach it. Written once, when the value is made; the value is the proof.
 */
const probedSandbox = new WeakMap<ChildProcess.Containment, { readonly dir: string; readonly support: Sandbox.Support }>()

/**
 * The `auto` probe: bwrap under the sandbox's strictest view first (a pid namespace, a read-only
 * root, a private `/tmp`, a writable bind, no network). Where that runs, the pid namespace works
 * too, and the sandbox's answer is known from the same run: one bwrap instead of two, on the path
 * of the first `session/new` (whose modes wait for the sandbox's answer; each bwrap blocks the
 * event loop for its spawn and takes ~30 ms to run). Where it does not (no bwrap, or a container
 * that forbids network namespaces), the plain pid namespace is probed as before.
 */
const probeContainment = (): Effect.Effect<ChildProcess.Containment> => {
  const dir = os.tmpdir()
  return Sandbox.probe("bwrap", dir).pipe(
    Effect.flatMap((sandbox) =>
      Effect.map(
        sandbox._tag === "Available" ? Effect.succeed<ChildProcess.ProbeResult>({ _tag: "Works" }) : ChildProcess.probeBwrap(),
        (probe) => ({ probe, sandbox })
      )
    ),
    Effect.tap(({ probe }) => {
      switch (probe._tag) {
        case "Works":
          return Effect.logInfo("containment: bwrap pid namespace")
        case "Missing":
          return Effect.logInfo("containment: process groups (bwrap is not installed; a setsid grandchild can escape)")
        case "Broken":
          return Effect.logWarning(`containment: process groups (bwrap does not work here: ${probe.reason.split("\n")[0]})`)
      }
    }),
    Effect.map(({ probe, sandbox }) => {
      if (probe._tag !== "Works") return ChildProcess.processGroup
      const containment: ChildProcess.Containment = { ...pidNamespace }
      probedSandbox.set(containment, { dir, support: sandbox })
      return containment
    })
  )
}

/**
 * Whether the sandbox profiles work, asked once (lazily) and logged: they need a bwrap namespace
 * (so never with process groups) that can also mount a read-only root and a private `/tmp` and
 * make a network namespace. `tempDir` is what the probe binds writable, as a session's own directory.
 */
export const resolveSandbox = (
  containmentOf: Effect.Effect<ChildProcess.Containment>,
  tempDir: string
): Effect.Effect<Effect.Effect<Sandbox.Support>> =>
  lazyOnce(
    Effect.flatMap(containmentOf, (containment): Effect.Effect<Sandbox.Support> => {
      if (containment._tag === "ProcessGroup") {
        return Effect.succeed({ _tag: "Unavailable", reason: "commands run in process groups, not in bwrap namespaces" })
      }
      // Asked already by the `auto` probe, for the same writable directory: not asked again.
      const probed = probedSandbox.get(containment)
      return probed !== undefined && probed.dir === tempDir ? Effect.succeed(probed.support) : Sandbox.probe("bwrap", tempDir)
    }).pipe(
      Effect.tap((support) =>
        support._tag === "Available"
          ? Effect.logInfo("sandbox: the read-only and workspace profiles are available")
          : Effect.logInfo(`sandbox: only the full profile is offered (${support.reason})`)
      )
    )
  )
