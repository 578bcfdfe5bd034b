/**
 * The bash executor on real processes: `bash --noprofile --norc -c`, one process group per call,
 * a per-session cwd, scrubbed environment, bounded output and owned background tasks.
 *
 * Lifecycle of one call (foreground or background), see `execute`:
 *   spawn (own group, stdin /dev/null) → wait for the main process to exit, or for the timeout /
 *   cancel / kill request (then TERM → 2 s → KILL to the group) → drain the pipes for at most 2 s
 *   (a `&` job may hold them) → count what is left of the group, SIGKILL it → render the result.
 * Every wait is bounded, and closing the scope that owns a call runs the same kill sequence.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as v8 from "node:v8"
import * as crypto from "node:crypto"
import { StringDecoder } from "node:string_decoder"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import {
  Bash,
  type BackgroundTask,
  BashError,
  type BashConfig,
  type BashResult,
  type BashSession,
  DEFAULT_TIMEOUT_MS,
  MAX_TIMEOUT_MS,
  type RunEvent,
  type RunRequest,
  type TaskInfo,
  type TaskOutput
} from "./Bash.js"
import * as ChildProcess from "./ChildProcess.js"
import * as Containment from "./Containment.js"
import * as EnvScrub from "./EnvScrub.js"
import type { ExitStatus } from "../Terminal/ExitStatus.js"
import { ModelText, OutputBudget } from "./OutputBudget.js"
import * as OutputPump from "./OutputPump.js"
import * as Sandbox from "./Sandbox.js"
import * as ShellScript from "./ShellScript.js"
import * as StatusLines from "./StatusLines.js"

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

/** After the main process exited, how long `&` jobs may keep the pipes open before they are killed. */
const DRAIN = Duration.seconds(2)
/** A background start waits this long, so an instant failure is reported inline. */
const START_WAIT = Duration.seconds(1)
/** Upper bound on waiting for a stopped task to report its end. */
const STOP_LIMIT = Duration.seconds(10)
/** Output chunks a foreground stream buffers before the command is slowed down. */
const FOREGROUND_QUEUE_CHUNKS = 64
/** Characters a task's `events` buffers for a consumer that is late or absent; beyond, chunks are skipped (and said so). */
const EVENTS_MAX_CHARS = 4 * 1024 * 1024

/**
 * Output flows through the executor and the bridge as one string per pipe chunk, and V8 grows the
 * young generation under such a stream up to 3 x 16 MiB: a 1 GiB flood through the agent peaked at
 * 160-185 MiB RSS. Keeping the young generation at its initial size held it at 110-117 MiB at the
 * same speed. Done at the first spawn, not at start: `node:v8` costs ~1.5 ms to load, and the code
 * cache records V8's flags (changed while it is written, every later start would reject it).
 */
let heapTuned = false
const tuneHeapOnce = (): void => {
  if (heapTuned) return
  heapTuned = true
  v8.setFlagsFromString("--semi-space-growth-factor=1")
}

const timeouts = (requested: number | undefined, fallback: number | undefined) => {
  const want = requested ?? fallback
  if (want === undefined) return { timeoutMs: undefined, clampedMs: undefined }
  return want > MAX_TIMEOUT_MS ? { timeoutMs: MAX_TIMEOUT_MS, clampedMs: MAX_TIMEOUT_MS } : { timeoutMs: want, clampedMs: undefined }
}

const isDirectory = (dir: string): "ok" | "missing" | "notDirectory" => {
  try {
    return fs.statSync(dir).isDirectory() ? "ok" : "notDirectory"
  } catch {
    return "missing"
  }
}

/** The call ended in another directory than `dir`, where it started (`pwd -P` resolves symlinks). */
const movedTo = (dir: string, finalCwd: string | undefined): boolean => {
  if (finalCwd === undefined || finalCwd === dir) return false
  try {
    return fs.realpathSync(dir) !== finalCwd
  } catch {
    return true
  }
}

/** A call's `workdir`; an empty one is no workdir (as `BashTool.callCwd` shows it: the session cwd, and a `cd` persists). */
const workdirOf = (args: RunRequest): string | undefined => args.workdir === "" ? undefined : args.workdir

/** The directory a call runs in: the session cwd, or `workdir` resolved against it. */
const resolveDir = (base: string, workdir: string | undefined): Effect.Effect<string, BashError> =>
  Effect.suspend(() => {
    const dir = workdir === undefined ? base : path.resolve(base, workdir)
    const state = isDirectory(dir)
    if (state === "ok") return Effect.succeed(dir)
    const what = workdir === undefined ? `the session directory ${dir}` : `workdir ${JSON.stringify(workdir)} (${dir})`
    return Effect.fail(
      new BashError({
        reason: "BadWorkdir",
        message: state === "missing" ? `${what} does not exist` : `${what} is not a directory`
      })
    )
  })

interface ExecSpec {
  readonly command: string
  readonly cwd: string
  readonly timeoutMs: number | undefined
  readonly clampedMs: number | undefined
  /** Foreground calls record the final `pwd -P` so a `cd` persists. */
  readonly recordCwd: boolean
  /** Completes when the call must be stopped (cancel, task kill): the kill sequence runs. */
  readonly stop: Effect.Effect<void>
  /** Each decoded chunk and the raw bytes it came from; a returned Promise pauses the pipes until it resolves. */
  readonly onOutput: (text: string, bytes: Uint8Array) => Promise<void> | undefined
  /** Takes the namespace the session started ahead for this call, if any (the spawn owns it from then on). */
  readonly prewarmed?: () => ChildProcess.Prewarmed | undefined
  /** The session's own directory: cwd and exit records, full-output files (writable in every sandbox profile). */
  readonly toolDir: string
  /** The call's environment, bar `PWD`. */
  readonly env: Readonly<Record<string, string>>
  /** The session's bash file, when written (it is then in `env` as `BASH_ENV`; see ShellScript). */
  readonly envFile: string | undefined
}

/** How every call runs its script (the script is the last argument). */
const BASH_FILE = "bash"
const BASH_ARGS: ReadonlyArray<string> = ["--noprofile", "--norc", "-c"]

/** The environment of every call, bar `PWD`. */
const callEnv = (config: BashConfig): Record<string, string> => {
  const { PWD: _pwd, ...env } = EnvScrub.scrub(process.env, { allow: config.envAllow })
  return env
}

interface ExecResult {
  readonly result: BashResult
  readonly status: ExitStatus
  /** Where the shell ended (`pwd -P` on EXIT), when recorded. */
  readonly finalCwd: string | undefined
}

/**
 * Spawns the call in the current scope (failing with `SpawnFailed`), and returns the effect that
 * waits for it to finish and renders its result. The scope's close kills whatever is left.
 */
const execute = (
  config: BashConfig,
  containment: ChildProcess.Containment,
  spec: ExecSpec
): Effect.Effect<Effect.Effect<ExecResult>, BashError, Scope.Scope> =>
  Effect.gen(function*() {
    const tempFile = (kind: string) =>
      path.join(spec.toolDir, `dsh-acp-${kind}-${crypto.randomBytes(6).toString("hex")}`)
    const cwdFile = spec.recordCwd ? tempFile("cwd") : undefined
    // In a pid namespace a signal death reaches us as 128+n; the EXIT trap's record tells them apart.
    const exitFile = containment._tag === "PidNamespace" ? tempFile("exit") : undefined
    for (const file of [cwdFile, exitFile]) {
      if (file !== undefined) yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(file, { force: true })))
    }
    const records = { cwdFile, exitFile }
    const script = spec.envFile === undefined
      ? ShellScript.inlineScript(spec.command, records)
      : ShellScript.script(spec.command, records)
    const budget = new OutputBudget({
      maxChars: config.maxOutputChars,
      fullOutputMaxBytes: config.fullOutputMaxBytes,
      tempDir: spec.toolDir
    })
    // Only the normal path reaches `budget.finish()`: an interrupted call (consumer gone, cancel
    // grace over, session closed) would otherwise leak the full-output file and its descriptor.
    yield* Effect.addFinalizer(() => Effect.sync(() => budget.abort()))
    // A multi-byte character split across two chunks is completed by the next one.
    const decoder = new StringDecoder("utf8")
    /** Raw bytes read but not yet reported: their text is still inside the decoder (a split character). */
    let heldBytes: Uint8Array | undefined
    const takeBytes = (chunk: Uint8Array): Uint8Array => {
      if (heldBytes === undefined) return chunk
      const all = Buffer.concat([heldBytes, chunk])
      heldBytes = undefined
      return all
    }
    /** The consumer is behind: data is waiting in the pipes for it. */
    let paused = false
    tuneHeapOnce()
    const child = yield* ChildProcess.spawn({
      file: BASH_FILE,
      args: [...BASH_ARGS, script],
      cwd: spec.cwd,
      env: { ...spec.env, PWD: spec.cwd },
      containment,
      ...(exitFile === undefined ? {} : { exitFile }),
      ...(spec.prewarmed === undefined ? {} : { prewarmed: spec.prewarmed }),
      onData: (chunk, pipes) => {
        const text = decoder.write(chunk)
        budget.write(chunk, text)
        if (text === "") {
          heldBytes = takeBytes(chunk)
          return
        }
        const wait = spec.onOutput(text, takeBytes(chunk))
        if (wait !== undefined) {
          paused = true
          pipes.pause()
          void wait.then(() => {
            paused = false
            pipes.resume()
          })
        }
      }
    }).pipe(Effect.mapError((e) => new BashError({ reason: "SpawnFailed", message: e.message })))

    const stopped = yield* Deferred.make<"timeout" | "cancel">()
    if (spec.timeoutMs !== undefined) {
      yield* Effect.sleep(Duration.millis(spec.timeoutMs)).pipe(
        Effect.zipRight(Deferred.succeed(stopped, "timeout")),
        Effect.forkScoped
      )
    }
    yield* spec.stop.pipe(Effect.zipRight(Deferred.succeed(stopped, "cancel")), Effect.forkScoped)

    return Effect.gen(function*() {
      let stoppedBy: "timeout" | "cancel" | undefined
      const status = yield* Effect.raceFirst(
        child.exit,
        Deferred.await(stopped).pipe(
          Effect.flatMap((reason) => {
            stoppedBy = reason
            return child.terminate
          })
        )
      )
      // Pipes held open by `&` jobs: give them a moment to finish, then the group goes.
      // Usually the pipes closed with the exit: then no bounded wait (a timer and a fiber) is needed.
      if (!child.hasClosed()) yield* Effect.interruptible(child.closed).pipe(Effect.timeout(DRAIN), Effect.ignore)
      const leftovers = child.countLive()
      child.signalGroup("SIGKILL")
      // Nothing can write any more (bar a `setsid` escapee): take what is still in the pipes. While a
      // slow consumer holds us back, keep waiting (it either reads or goes away, which resumes the
      // pipes); otherwise a second is plenty.
      if (!child.hasClosed()) {
        yield* Effect.interruptible(child.closed).pipe(
          Effect.timeoutTo({ duration: Duration.seconds(1), onSuccess: () => true, onTimeout: () => false }),
          Effect.repeat({ until: (closed) => closed || !paused })
        )
      }
      child.destroyPipes()
      const rest = decoder.end()
      if (rest !== "") {
        budget.write(new Uint8Array(0), rest)
        void spec.onOutput(rest, takeBytes(new Uint8Array(0)))
      }
      const { output, truncated } = budget.finish()
      const parts: StatusLines.ResultParts = {
        output: StatusLines.toOutputText(output),
        ...(truncated !== undefined ? { truncated } : {}),
        ...(spec.clampedMs !== undefined ? { timeoutClampedMs: spec.clampedMs } : {}),
        ...(stoppedBy === "timeout" && spec.timeoutMs !== undefined ? { timedOutAfterMs: spec.timeoutMs } : {}),
        ...(leftovers > 0 ? { backgroundJobsKilled: leftovers } : {}),
        end: status
      }
      const text = StatusLines.render(parts)
      let finalCwd: string | undefined
      if (cwdFile !== undefined) {
        try {
          const recorded = fs.readFileSync(cwdFile, "utf8").replace(/\n$/, "")
          fs.rmSync(cwdFile, { force: true })
          if (path.isAbsolute(recorded) && !recorded.includes("\n")) finalCwd = recorded
        } catch {
          // killed before the EXIT trap ran: the cwd stays where it was
        }
      }
      return { result: { _tag: "Completed", parts, text, cwd: spec.cwd } satisfies BashResult, status, finalCwd }
    })
  })

/** Consecutive output merged into one event up to this size. */
const MERGE_MAX_CHARS = 1024 * 1024

/**
 * Consecutive `Output` events taken from the queue in one pull, merged (up to {@link MERGE_MAX_CHARS}).
 * Each event costs its consumers a fixed amount (effects through the tool, the mapper and the
 * display budget): when the consumer falls behind a flood, the queue holds many pipe-sized chunks
 * and they are handled as one. Live output (one chunk at a time) is passed on as it is.
 */
const mergeOutputs = (chunk: Chunk.Chunk<RunEvent>): Chunk.Chunk<RunEvent> => {
  if (chunk.length < 2) return chunk
  const out: Array<RunEvent> = []
  let texts: Array<string> = []
  let bytes: Array<Uint8Array> = []
  let chars = 0
  let allBytes = true
  const flush = () => {
    if (texts.length === 0) return
    if (texts.length === 1) out.push(allBytes ? { _tag: "Output", data: texts[0]!, bytes: bytes[0]! } : { _tag: "Output", data: texts[0]! })
    else out.push(allBytes ? mergedOutput(texts, bytes) : { _tag: "Output", data: texts.join("") })
    texts = []
    bytes = []
    chars = 0
    allBytes = true
  }
  for (const e of chunk) {
    if (e._tag !== "Output") {
      flush()
      out.push(e)
      continue
    }
    if (chars + e.data.length > MERGE_MAX_CHARS) flush()
    texts.push(e.data)
    chars += e.data.length
    if (e.bytes === undefined) allBytes = false
    else bytes.push(e.bytes)
  }
  flush()
  return out.length === chunk.length ? chunk : Chunk.unsafeFromArray(out)
}

/**
 * A merged event whose text and bytes are joined when first read: a consumer usually reads only
 * one of them (the v1 card the text, the v2 card the bytes), and each join copies up to a MiB.
 */
const mergedOutput = (texts: ReadonlyArray<string>, parts: ReadonlyArray<Uint8Array>): RunEvent => {
  let data: string | undefined
  let bytes: Uint8Array | undefined
  return {
    _tag: "Output",
    get data() {
      return data ??= texts.join("")
    },
    get bytes() {
      return bytes ??= Buffer.concat(parts)
    }
  }
}

/** The executor's own failure while running a call, as the caller sees it. */
const internalError = (cause: Cause.Cause<unknown>): BashError => {
  const error = Cause.squash(cause)
  return new BashError({
    reason: "Internal",
    message: `the executor failed while running the command: ${error instanceof Error ? error.message : String(error)}`
  })
}

interface TaskState {
  readonly id: string
  readonly command: string
  readonly cwd: string
  readonly startedAt: number
  result: BashResult | undefined
  readonly stop: Deferred.Deferred<void>
  readonly done: Deferred.Deferred<BashResult>
  readonly window: ModelText
  readonly events: Queue.Queue<RunEvent>
  fiber: Fiber.RuntimeFiber<void> | undefined
}

const taskInfo = (t: TaskState): TaskInfo => ({
  id: t.id,
  command: t.command,
  cwd: t.cwd,
  startedAt: t.startedAt,
  ...(t.result !== undefined ? { result: t.result } : {})
})

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
    const tasks = new Map<string, TaskState>()
    let taskCounter = 0
    /** Tasks between the limit check and their registration. */
    let starting = 0

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
    const envFor = (containment: ChildProcess.Containment): Record<string, string> => ({
      ...callEnv(config),
      ...(containment._tag === "PidNamespace" && containment.view !== undefined ? Sandbox.sandboxedEnv : {}),
      ...(envFile === undefined ? {} : { BASH_ENV: envFile })
    })

    // The next foreground call's namespace, started while the session is idle (bwrap's start-up is
    // most of what a pid namespace costs a call). At most one, for the current profile (a spare of
    // another profile is never used: see `prewarmedFits`); ended when the session closes.
    let spare: ChildProcess.Prewarmed | undefined
    let sessionClosed = false
    const refill = (containment: ChildProcess.Containment): void => {
      if (sessionClosed || spare !== undefined || containment._tag !== "PidNamespace") return
      spare = ChildProcess.prewarm(containment.bwrap, BASH_FILE, BASH_ARGS, envFor(containment), containment.view)
    }
    const takeSpare = (): ChildProcess.Prewarmed | undefined => {
      const taken = spare
      spare = undefined
      return taken
    }
    /** After a call: refill, for the profile current then, once the event loop has sent what the call produced. */
    const refillSoon: Effect.Effect<void> = Effect.flatMap(
      currentContainment,
      (containment) => Effect.sync(() => void setImmediate(() => refill(containment)))
    )
    const disposeSpare = Effect.suspend(() => {
      const taken = takeSpare()
      return taken === undefined ? Effect.void : ChildProcess.disposePrewarmed(taken)
    })
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        sessionClosed = true
        return disposeSpare
      })
    )
    yield* Effect.forkScoped(refillSoon)

    const setProfile = (profile: Sandbox.SandboxProfile): Effect.Effect<void, BashError> =>
      Effect.gen(function*() {
        if (profile !== "full") {
          const now = yield* sandboxOf
          if (now._tag === "Unavailable") {
            return yield* new BashError({ reason: "SandboxUnavailable", message: `the ${profile} profile is not available: ${now.reason}` })
          }
        }
        if ((yield* Ref.getAndSet(profileRef, profile)) === profile) return
        // The spare was made for the old profile: replace it now, so the next call still finds one.
        yield* disposeSpare
        yield* refillSoon
      })

    /** The kill sequence through the task's own lifecycle, so its `events` still end with `Finished`. Bounded. */
    const stopTask = (t: TaskState): Effect.Effect<void> =>
      Deferred.succeed(t.stop, undefined).pipe(
        // Grace + drain + final kill stay well under this; the margin only guards the guard.
        Effect.zipRight(Effect.interruptible(Deferred.await(t.done)).pipe(Effect.timeout(STOP_LIMIT), Effect.ignore))
      )

    // Closing the session kills every task at once (not one grace period after another).
    yield* Effect.addFinalizer(() =>
      Effect.forEach(
        [...tasks.values()],
        (t) =>
          stopTask(t).pipe(
            Effect.zipRight(t.fiber === undefined ? Effect.void : Fiber.interrupt(t.fiber)),
            // A task that did not finish in time has no `Finished`: end its events for any reader.
            Effect.zipRight(Effect.suspend(() => t.result === undefined ? Queue.shutdown(t.events) : Effect.void))
          ),
        { concurrency: "unbounded", discard: true }
      )
    )

    const run = (args: RunRequest, options?: { readonly cancel?: Effect.Effect<void> }): Stream.Stream<RunEvent, BashError> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const base = yield* Ref.get(cwdRef)
        const dir = yield* resolveDir(base, workdirOf(args))
        const queue = yield* Effect.acquireRelease(Queue.bounded<RunEvent | WaitFailed>(FOREGROUND_QUEUE_CHUNKS), Queue.shutdown)
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
          onOutput: (data, bytes) => pump.push({ _tag: "Output", data, bytes }),
          // A long script is read slowly by the waiting init (see PREWARMED_MAX_SCRIPT): the spare waits for the next call.
          prewarmed: () => Buffer.byteLength(args.command) <= ChildProcess.PREWARMED_MAX_SCRIPT ? takeSpare() : undefined
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
          Effect.flatMap((r) =>
            Effect.promise(() => pump.push({ _tag: "Finished", result: r.result }) ?? Promise.resolve())
          ),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause) ? Effect.void : Queue.offer(queue, { _tag: "WaitFailed", error: internalError(cause) })
          ),
          Effect.ensuring(refillSoon),
          Effect.forkScoped
        )
        return Stream.fromQueue(queue).pipe(
          Stream.takeUntil((e) => e._tag !== "Output"),
          Stream.mapChunksEffect((chunk) => {
            const failure = Chunk.findFirst(chunk, (e): e is WaitFailed => e._tag === "WaitFailed")
            return Option.isSome(failure) ? Effect.fail(failure.value.error) : Effect.succeed(mergeOutputs(chunk as Chunk.Chunk<RunEvent>))
          })
        )
      }))

    const start = (args: RunRequest): Effect.Effect<BackgroundTask, BashError> =>
      Effect.gen(function*() {
        // Checked and reserved in one synchronous step, so concurrent starts cannot pass the limit.
        const refused = yield* Effect.sync(() => {
          const live = [...tasks.values()].filter((t) => t.result === undefined).length + starting
          if (live >= config.maxTasks) return live
          starting++
          return undefined
        })
        if (refused !== undefined) {
          return yield* new BashError({
            reason: "TooManyTasks",
            message: `${refused} background tasks are running (at most ${config.maxTasks}); kill one first`
          })
        }
        const slot = { held: true }
        return yield* startReserved(args, slot).pipe(Effect.ensuring(Effect.sync(() => {
          if (slot.held) starting--
        })))
      })

    /** Starts a task whose slot is reserved; the slot passes to `tasks` once registered. */
    const startReserved = (args: RunRequest, slot: { held: boolean }): Effect.Effect<BackgroundTask, BashError> =>
      Effect.gen(function*() {
        const base = yield* Ref.get(cwdRef)
        const dir = yield* resolveDir(base, workdirOf(args))
        const id = `bg-${++taskCounter}`
        const containment = yield* currentContainment
        const events = yield* Queue.unbounded<RunEvent>()
        let queuedChars = 0
        let skippedChars = 0
        const flushSkipped = () => {
          if (skippedChars === 0) return
          const note = `\n[… ${skippedChars} chars of output skipped …]\n`
          skippedChars = 0
          queuedChars += note.length
          events.unsafeOffer({ _tag: "Output", data: note })
        }
        const offerEvent = (data: string, bytes: Uint8Array) => {
          if (queuedChars + data.length > EVENTS_MAX_CHARS) {
            skippedChars += data.length
            return
          }
          flushSkipped()
          queuedChars += data.length
          events.unsafeOffer({ _tag: "Output", data, bytes })
        }
        const state: TaskState = {
          id,
          command: args.command,
          cwd: dir,
          startedAt: Date.now(),
          result: undefined,
          stop: yield* Deferred.make<void>(),
          done: yield* Deferred.make<BashResult>(),
          window: new ModelText(config.maxOutputChars),
          events,
          fiber: undefined
        }
        // The task's process lives in its own scope, closed by the task's fiber when it ends or is
        // interrupted (task kill, session close). Spawn and fork are one uninterruptible step so no
        // process can be started without an owner.
        yield* Effect.uninterruptible(Effect.gen(function*() {
          const scope = yield* Scope.make()
          const wait = yield* execute(config, containment, {
            command: args.command,
            cwd: dir,
            ...timeouts(args.timeout_ms, undefined),
            recordCwd: false,
            stop: Deferred.await(state.stop),
            toolDir,
            env: envFor(containment),
            envFile,
            onOutput: (data, bytes) => {
              state.window.push(data)
              offerEvent(data, bytes)
              return undefined
            }
          }).pipe(
            Scope.extend(scope),
            Effect.tapError(() => Scope.close(scope, Exit.void))
          )
          tasks.set(id, state)
          slot.held = false
          starting--
          // Forked from an uninterruptible region, the fiber would inherit it: make it interruptible.
          state.fiber = yield* Effect.interruptible(wait).pipe(
            // Should the wait die (a defect while rendering, say), the task still ends: its events
            // get a `Finished` saying so (not a valid result text: a UI shows it as failed) and a
            // stop does not wait for a `done` that would never come. Its scope kills what is left.
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause)
                : Effect.sync(() => {
                  const error = internalError(cause)
                  return { result: { _tag: "Failed", error, text: error.message, cwd: dir } satisfies BashResult }
                })
            ),
            Effect.flatMap((r) =>
              Effect.sync(() => {
                state.result = r.result
                flushSkipped()
                events.unsafeOffer({ _tag: "Finished", result: r.result })
              }).pipe(Effect.zipRight(Deferred.succeed(state.done, r.result)))
            ),
            Effect.asVoid,
            Effect.ensuring(Scope.close(scope, Exit.void)),
            Effect.forkDaemon
          )
        }))
        const early = yield* Effect.interruptible(Deferred.await(state.done)).pipe(Effect.timeout(START_WAIT), Effect.option)
        const window = state.window.take()
        const startedParts: StatusLines.ResultParts = {
          output: StatusLines.toOutputText(window.text),
          ...(window.omittedChars > 0 ? { truncated: { omittedChars: window.omittedChars } } : {}),
          end: StatusLines.BackgroundStarted.make({ taskId: id })
        }
        const started: BashResult = Option.isSome(early)
          ? early.value
          : { _tag: "Completed", parts: startedParts, text: StatusLines.render(startedParts), cwd: dir }
        return {
          info: taskInfo(state),
          started,
          events: Stream.fromQueue(events).pipe(
            Stream.tap((e) => Effect.sync(() => {
              if (e._tag === "Output") queuedChars -= e.data.length
            })),
            Stream.takeUntil((e) => e._tag === "Finished")
          )
        }
      })

    const find = (id: string): Effect.Effect<TaskState, BashError> =>
      Effect.suspend(() => {
        const t = tasks.get(id)
        return t === undefined
          ? Effect.fail(new BashError({ reason: "TaskNotFound", message: `no background task ${id}` }))
          : Effect.succeed(t)
      })

    const session: BashSession = {
      cwd: Ref.get(cwdRef),
      run,
      start,
      list: Effect.sync(() => [...tasks.values()].map(taskInfo)),
      read: (id) =>
        Effect.map(find(id), (t): TaskOutput => {
          // The window's text marks omitted output in the middle when it exceeded the budget.
          const { text } = t.window.take()
          return { info: taskInfo(t), output: text, running: t.result === undefined }
        }),
      kill: (id) =>
        find(id).pipe(Effect.tap(stopTask), Effect.map(taskInfo)),
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
export const layer = (config?: Partial<BashConfig>): Layer.Layer<Bash> =>
  Layer.effect(
    Bash,
    Effect.gen(function*() {
      const merged: BashConfig = {
        ...defaultConfig,
        ...config,
        containment: config?.containment ?? Containment.containmentFromEnv() ?? defaultConfig.containment ?? "auto"
      }
      const containment = yield* Containment.resolveContainment(merged.containment ?? "auto")
      const sandbox = yield* Containment.resolveSandbox(containment, merged.tempDir)
      return { session: (options) => makeSession(merged, containment, sandbox, options) }
    })
  )
