/**
 * One call, foreground or background, from spawn to rendered result:
 *   spawn (own group, stdin /dev/null) → wait for the main process to exit, or for the timeout /
 *   cancel / kill request (then TERM → 2 s → KILL to the group) → drain the pipes for at most 2 s
 *   (a `&` job may hold them) → count what is left of the group, SIGKILL it → render the result.
 * Every wait is bounded, and closing the scope that owns a call runs the same kill sequence.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { BashError, type BashConfig, type BashResult, MAX_TIMEOUT_MS } from "./Bash.js"
import * as ChildProcess from "./ChildProcess.js"
import * as EnvScrub from "./EnvScrub.js"
import { randomHex } from "../Platform/Random.js"
import type { ExitStatus } from "../Terminal/ExitStatus.js"
import { OutputBudget } from "./OutputBudget.js"
import { wholeCharacters } from "./OutputEvents.js"
import * as ShellScript from "./ShellScript.js"
import * as StatusLines from "./StatusLines.js"

/** After the main process exited, how long `&` jobs may keep the pipes open before they are killed. */
const DRAIN = Duration.seconds(2)
export const timeouts = (requested: number | undefined, fallback: number | undefined) => {
  const want = requested ?? fallback
  if (want === undefined) return { timeoutMs: undefined, clampedMs: undefined }
  return want > MAX_TIMEOUT_MS ? { timeoutMs: MAX_TIMEOUT_MS, clampedMs: MAX_TIMEOUT_MS } : { timeoutMs: want, clampedMs: undefined }
}

/** This process's random part of temp names, drawn once: random bytes per file would cost every call. */
let processTag: string | undefined
let tempCounter = 0
/** Unique among every process sharing a temp directory (the random part) and within this one (the counter). */
const uniqueSuffix = (): string => `${processTag ??= randomHex(6)}-${++tempCounter}`

/** A call's record file; absent when the call was killed before its EXIT trap wrote it. */
const removeRecord = (file: string): void => {
  try {
    fs.unlinkSync(file)
  } catch {
    // never written
  }
}

export { incompleteTail } from "./OutputEvents.js"

export interface ExecSpec {
  readonly command: string
  readonly cwd: string
  readonly timeoutMs: number | undefined
  readonly clampedMs: number | undefined
  /** Foreground calls record the final `pwd -P` so a `cd` persists. */
  readonly recordCwd: boolean
  /** Completes when the call must be stopped (cancel, task kill): the kill sequence runs. */
  readonly stop: Effect.Effect<void>
  /**
   * Each chunk of output as whole UTF-8 characters (a character split across two reads is held
   * back until its last byte comes; invalid bytes are passed on). Not decoded here: a consumer
   * decodes what it keeps. A returned Promise pauses the pipes until it resolves.
   */
  readonly onOutput: (bytes: Uint8Array) => Promise<void> | undefined
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
export const BASH_FILE = "bash"
export const BASH_ARGS: ReadonlyArray<string> = ["--noprofile", "--norc", "-c"]

/** The environment of every call, bar `PWD`. */
export const callEnv = (config: BashConfig): Record<string, string> => {
  const { PWD: _pwd, ...env } = EnvScrub.scrub(process.env, { allow: config.envAllow })
  return env
}

export interface ExecResult {
  readonly result: BashResult
  readonly status: ExitStatus
  /** Where the shell ended (`pwd -P` on EXIT), when recorded. */
  readonly finalCwd: string | undefined
}

/**
 * Spawns the call in the current scope (failing with `SpawnFailed`), and returns the effect that
 * waits for it to finish and renders its result. The scope's close kills whatever is left.
 */
export const execute = (
  config: BashConfig,
  containment: ChildProcess.Containment,
  spec: ExecSpec
): Effect.Effect<Effect.Effect<ExecResult>, BashError, Scope.Scope> =>
  Effect.gen(function*() {
    const tempFile = (kind: string) => path.join(spec.toolDir, `dsh-acp-${kind}-${uniqueSuffix()}`)
    const cwdFile = spec.recordCwd ? tempFile("cwd") : undefined
    // In a pid namespace a signal death reaches us as 128+n; the EXIT trap's record tells them apart.
    const exitFile = containment._tag === "PidNamespace" ? tempFile("exit") : undefined
    // Removed once, when the call's scope closes. `unlinkSync`, not `rmSync({ force })`: rmSync
    // stats the path first, and removing the cwd record on the read path too made this a second,
    // failing, removal (an ENOENT exception) on every call.
    for (const file of [cwdFile, exitFile]) {
      if (file !== undefined) yield* Effect.addFinalizer(() => Effect.sync(() => removeRecord(file)))
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
    // Each reported chunk is whole characters: a consumer cutting the bytes (the card's display
    // budget) never cuts a character in two.
    const whole = wholeCharacters()
    /** The consumer is behind: data is waiting in the pipes for it. */
    let paused = false
    const child = yield* ChildProcess.spawn({
      file: BASH_FILE,
      args: [...BASH_ARGS, script],
      cwd: spec.cwd,
      env: { ...spec.env, PWD: spec.cwd },
      containment,
      ...(exitFile === undefined ? {} : { exitFile }),
      ...(spec.prewarmed === undefined ? {} : { prewarmed: spec.prewarmed }),
      onData: (chunk, pipes) => {
        const bytes = whole.push(chunk)
        if (bytes === undefined) return
        budget.write(bytes)
        const wait = spec.onOutput(bytes)
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
    // The timeout is a plain timer, cleared when the call's scope closes: nearly every call has one
    // and finishes first, and a sleeping fiber per call (forked, then interrupted) showed in the
    // per-call CPU profile. Whichever of timer and stop comes first decides `stopped`.
    const timeoutMs = spec.timeoutMs
    if (timeoutMs !== undefined) {
      yield* Effect.acquireRelease(
        Effect.sync(() => setTimeout(() => Deferred.unsafeDone(stopped, Effect.succeed("timeout" as const)), timeoutMs)),
        (timer) => Effect.sync(() => clearTimeout(timer))
      )
    }
    // Interruptible explicitly: a background task is spawned from an uninterruptible region, whose
    // forks would inherit it, and closing the call's scope would then wait for a stop request
    // that a finished call never gets.
    yield* spec.stop.pipe(Effect.zipRight(Deferred.succeed(stopped, "cancel")), Effect.interruptible, Effect.forkScoped)

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
      // A character never completed: its bytes, decoded as a decoder's end would (replacement characters).
      const rest = whole.end()
      if (rest !== undefined) {
        budget.write(rest)
        void spec.onOutput(rest)
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
          if (path.isAbsolute(recorded) && !recorded.includes("\n")) finalCwd = recorded
        } catch {
          // killed before the EXIT trap ran: the cwd stays where it was
        }
      }
      return { result: { _tag: "Completed", parts, text, cwd: spec.cwd } satisfies BashResult, status, finalCwd }
    })
  })

/** The executor's own failure while running a call, as the caller sees it. */
export const internalError = (cause: Cause.Cause<unknown>): BashError => {
  const error = Cause.squash(cause)
  return new BashError({
    reason: "Internal",
    message: `the executor failed while running the command: ${error instanceof Error ? error.message : String(error)}`
  })
}
