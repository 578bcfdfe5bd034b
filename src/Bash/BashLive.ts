/**
 * The bash executor on real processes: `bash --noprofile --norc -c`, one process group (or pid
 * namespace) per call, a per-session cwd, scrubbed environment, bounded output and owned
 * background tasks. This module is the wiring of a session; the parts:
 *   Execute      one call, spawn → wait → drain → kill what is left → rendered result
 *   ChildProcess the process and its kill sequence (NamespaceInit / NamespaceWatch: the pid-namespace
 *                protocol; Prewarm: a process started ahead; ProcScan: the /proc scans)
 *   SparePool    the session's processes (and namespaces) started ahead of its calls
 *   Tasks        background tasks (a FiberMap, a bounded history)
 *   ShellScript  the script around the command (cwd and status records that survive trap and exec)
 *   Workdir      where a call runs and whether it moved the session
 *   OutputBudget / ModelText / FullOutput / OutputPump / OutputEvents   the output's budgets, backpressure and events
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Mailbox from "effect/Mailbox"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import {
  Bash,
  BashError,
  type BashConfig,
  type BashLimits,
  type BashSession,
  DEFAULT_TIMEOUT_MS,
  MAX_TIMEOUT_MS,
  type RunEvent,
  type RunRequest
} from "./Bash.js"
import * as ChildProcess from "./ChildProcess.js"
import * as Containment from "./Containment.js"
import { BASH_ARGS, BASH_FILE, callEnv, execute, internalError, timeouts } from "./Execute.js"
import { mergeOutputs, outputOf } from "./OutputEvents.js"
import * as OutputPump from "./OutputPump.js"
import { PREWARMED_MAX_SCRIPT } from "./Prewarm.js"
import * as Sandbox from "./Sandbox.js"
import * as ShellScript from "./ShellScript.js"
import * as SparePool from "./SparePool.js"
import * as Tasks from "./Tasks.js"
import { movedTo, resolveDir, workdirOf } from "./Workdir.js"

export { containmentFromEnv, resolveContainment } from "./Containment.js"

export const defaultConfig: BashConfig = {
  defaultTimeoutMs: DEFAULT_TIMEOUT_MS,
  maxOutputChars: 30_000,
  fullOutputMaxBytes: 64 * 1024 * 1024,
  envAllow: [],
  maxTasks: 16,
  tempDir: os.tmpdir(),
  containment: "auto"
}

/** The limits no config changes (see `Bash.config`). */
export const limits: BashLimits = {
  maxTimeoutMs: MAX_TIMEOUT_MS,
  killGraceMs: Duration.toMillis(ChildProcess.KILL_GRACE)
}

/**
 * Output chunks (pipe reads, up to 64 KiB each) a foreground stream buffers before the command is
 * slowed down. 16, not 64: each chunk is held twice (text and bytes), and the agent under a flood peaked
 * ~15 MiB lower (a 256 MiB flood: 121 vs 137 MiB VmHWM, same run) at no measurable cost in throughput.
 */
const FOREGROUND_QUEUE_CHUNKS = 16
/** The foreground stream's own end when the call's waiter died: the stream fails with it. */
interface WaitFailed {
  readonly _tag: "WaitFailed"
  readonly error: BashError
}

const makeSession = (
  config: BashConfig,
  containmentOf: Effect.Effect<ChildProcess.Containment>,
  sandboxOf: Effect.Effect<Sandbox.Support>,
  options: { readonly cwd: string; readonly additionalDirectories?: ReadonlyArray<string> | undefined }
): Effect.Effect<BashSession, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Starts the `auto` probe (if not yet) without waiting for it: each call waits, at its spawn.
    yield* Effect.forkDaemon(containmentOf)
    const cwdRef = yield* Ref.make(path.resolve(options.cwd))
    // The session's own directory: the cwd, exit and full-output files of its calls (a missing
    // directory would silently lose the cwd). One directory, so a sandbox can leave it writable and
    // visible (the model reads the full output it is pointed at), and closing removes all of it.
    const toolDir = yield* Effect.sync(() => {
      try {
        fs.mkdirSync(config.tempDir, { recursive: true })
        return fs.mkdtempSync(path.join(config.tempDir, `dsh-acp-${process.pid}-`))
      } catch {
        // reported when a file cannot be written
        return config.tempDir
      }
    })
    if (toolDir !== config.tempDir) {
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(toolDir, { recursive: true, force: true })))
    }
    // Keeps the cwd record through a user's `trap … EXIT` and a final `exec` (see ShellScript).
    // Only in the session's own directory: the shared fallback is not ours to leave files in.
    const envFile = toolDir === config.tempDir ? undefined : ShellScript.writeEnvFile(toolDir)

    // The profile: the configured one when the sandbox works here, else `full` (said in the log).
    const requested = config.sandbox ?? "full"
    const support = requested === "full" ? Sandbox.available : yield* sandboxOf
    if (support._tag === "Unavailable") {
      yield* Effect.logWarning(`sandbox: the ${requested} profile is not available (${support.reason}); commands run in the full profile`)
    }
    const profileRef = yield* Ref.make<Sandbox.SandboxProfile>(support._tag === "Available" ? requested : "full")
    const scope: Sandbox.Scope = {
      workspace: path.resolve(options.cwd),
      additionalDirectories: options.additionalDirectories ?? [],
      toolDir,
      allowNetwork: config.allowNetwork === true
    }
    /** How the next call runs: the executor's containment with the session's current profile. */
    const currentContainment: Effect.Effect<ChildProcess.Containment> = Effect.gen(function*() {
      const base = yield* containmentOf
      const profile = yield* Ref.get(profileRef)
      return base._tag === "PidNamespace" && profile !== "full" ? { ...base, view: Sandbox.view(profile, scope) } : base
    })
    // Scrubbed once per session: scrubbing the agent's environment cost ~0.5 ms of every call.
    const scrubbedEnv = callEnv(config)
    const envFor = (containment: ChildProcess.Containment): Record<string, string> => ({
      ...scrubbedEnv,
      ...(containment._tag === "PidNamespace" && containment.view !== undefined ? Sandbox.sandboxedEnv : {}),
      ...(envFile === undefined ? {} : { BASH_ENV: envFile })
    })

    const spares = yield* SparePool.make(BASH_FILE, BASH_ARGS, envFor)
    const refillSoon: Effect.Effect<void> = Effect.flatMap(currentContainment, spares.refillSoon)
    yield* Effect.forkScoped(refillSoon)
    const dirFor = (args: RunRequest): Effect.Effect<string, BashError> =>
      Effect.flatMap(Ref.get(cwdRef), (base) => resolveDir(base, workdirOf(args)))
    const tasks = yield* Tasks.make({ config, dirFor, containment: currentContainment, envFor, toolDir, envFile })

    const setProfile = (profile: Sandbox.SandboxProfile): Effect.Effect<void, BashError> =>
      Effect.gen(function*() {
        if (profile !== "full") {
          const now = yield* sandboxOf
          if (now._tag === "Unavailable") {
            return yield* new BashError({ reason: "SandboxUnavailable", message: `the ${profile} profile is not available: ${now.reason}` })
          }
        }
        if ((yield* Ref.getAndSet(profileRef, profile)) === profile) return
        // The spares were made for the old profile: replace them now, so the next call still finds one.
        yield* spares.dispose
        yield* refillSoon
      })

    const run = (args: RunRequest, options?: { readonly cancel?: Effect.Effect<void> }): Stream.Stream<RunEvent, BashError> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const dir = yield* dirFor(args)
        // A Mailbox (an array), not a Queue: a Queue is a linked list whose removed nodes keep their
        // value and their next node, so a node promoted to the old generation before it was removed
        // kept every later node and its read buffer alive through scavenges ("nepotism"): under a
        // flood the reads' buffers reached the old generation and were freed only by full collections.
        const queue = yield* Effect.acquireRelease(Mailbox.make<RunEvent | WaitFailed>({ capacity: FOREGROUND_QUEUE_CHUNKS }), (m) => m.shutdown)
        const pump = OutputPump.make(queue, yield* Effect.runtime<never>())
        const containment = yield* currentContainment
        const wait = yield* execute(config, containment, {
          command: args.command,
          cwd: dir,
          ...timeouts(args.timeout_ms, config.defaultTimeoutMs),
          // `workdir` is for this call only: a `cd` inside it does not move the session.
          recordCwd: workdirOf(args) === undefined,
          stop: options?.cancel ?? Effect.never,
          toolDir,
          env: envFor(containment),
          envFile,
          onOutput: (bytes) => pump.push(outputOf(bytes)),
          // A long script is read slowly by the waiting init (see PREWARMED_MAX_SCRIPT): the spare waits for the next call.
          prewarmed: () => Buffer.byteLength(args.command) <= PREWARMED_MAX_SCRIPT ? spares.take() : undefined
        })
        // Should the fiber below die (a defect while rendering, say), no `Finished` would ever come:
        // its failure comes through the queue instead and fails the stream, whose scope then kills
        // what is left of the call. (Through the queue, not a race per element: a flood's chunks
        // pay nothing for it.)
        yield* wait.pipe(
          // Concurrent calls each start from the cwd as it was at their start; only a call whose
          // shell ended elsewhere moves the session (the last such call to finish wins), so a call
          // that did not `cd` never undoes a concurrent one's move.
          Effect.tap((r) => movedTo(dir, r.finalCwd) ? Ref.set(cwdRef, r.finalCwd!) : Effect.void),
          // Usually the queue has room and `push` answers at once: then no Promise (and no async
          // resumption of this fiber, a microtask later) is made for the call's last event.
          Effect.flatMap((r) =>
            Effect.suspend(() => {
              const wait = pump.push({ _tag: "Finished", result: r.result })
              return wait === undefined ? Effect.void : Effect.promise(() => wait)
            })
          ),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause) ? Effect.void : queue.offer({ _tag: "WaitFailed", error: internalError(cause) })
          ),
          Effect.ensuring(refillSoon),
          Effect.forkScoped
        )
        return Mailbox.toStream(queue).pipe(
          Stream.takeUntil((e) => e._tag !== "Output"),
          Stream.mapChunksEffect((chunk) => {
            const failure = Chunk.findFirst(chunk, (e): e is WaitFailed => e._tag === "WaitFailed")
            return Option.isSome(failure) ? Effect.fail(failure.value.error) : Effect.succeed(mergeOutputs(chunk as Chunk.Chunk<RunEvent>))
          })
        )
      }))

    const session: BashSession = {
      cwd: Ref.get(cwdRef),
      run,
      start: tasks.start,
      list: tasks.list,
      read: tasks.read,
      kill: tasks.kill,
      profile: Ref.get(profileRef),
      setProfile,
      sandbox: sandboxOf
    }
    return session
  })

/**
 * The live executor; `config` overrides {@link defaultConfig} field by field. The containment mode
 * comes from `config.containment`, else `DSH_ACP_CONTAINMENT`, else `"auto"`.
 */
export const make = (config?: Partial<BashConfig>): Effect.Effect<Context.Tag.Service<Bash>> =>
  Effect.gen(function*() {
    const merged: BashConfig = {
      ...defaultConfig,
      ...config,
      containment: config?.containment ?? Containment.containmentFromEnv() ?? defaultConfig.containment ?? "auto"
    }
    const containment = yield* Containment.resolveContainment(merged.containment ?? "auto")
    const sandbox = yield* Containment.resolveSandbox(containment, merged.tempDir)
    return {
      config: { ...merged, ...limits },
      prepare: Effect.asVoid(Effect.forkDaemon(sandbox)),
      session: (options) => makeSession(merged, containment, sandbox, options)
    }
  })

/** {@link make} as a layer. */
export const layer = (config?: Partial<BashConfig>): Layer.Layer<Bash> => Layer.effect(Bash, make(config))
