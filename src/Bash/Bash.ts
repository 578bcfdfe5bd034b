/**
 * The bash executor: one service, a shell per ACP session.
 *
 * A {@link BashSession} owns the session's cwd and its background tasks; closing the scope it was
 * made in kills every task it still owns. The implementation lives in `BashLive.ts`.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { SandboxProfile, Support as SandboxSupport } from "./Sandbox.js"
import type { ResultParts } from "./StatusLines.js"

export const DEFAULT_TIMEOUT_MS = 120_000
export const MAX_TIMEOUT_MS = 600_000

/**
 * What to run. The bash tool's arguments (`Tools/Bash/BashArgs`) have this shape; the executor
 * needs no more than this and knows nothing of models or cards.
 */
export interface RunRequest {
  /** The bash script (`bash --noprofile --norc -c`). */
  readonly command: string
  /** Milliseconds before the kill sequence (default {@link DEFAULT_TIMEOUT_MS}, clamped to {@link MAX_TIMEOUT_MS}). */
  readonly timeout_ms?: number
  /** Directory for this call only: absolute, or relative to the session's cwd; empty means none. */
  readonly workdir?: string
  /** Start as a background task (`start`), not a foreground call. */
  readonly run_in_background?: boolean
}

/**
 * What a running call reports, in order: raw output chunks (stdout and stderr merged), then one
 * `Finished`. `data` is the decoded text; `bytes`, when present, the raw bytes it came from (a
 * character split across pipe reads is in the bytes of the chunk that completes it, so the bytes
 * of all chunks concatenate to exactly what the command wrote). Absent on text the executor adds
 * itself (a skip note).
 */
export type RunEvent =
  | { readonly _tag: "Output"; readonly data: string; readonly bytes?: Uint8Array }
  | { readonly _tag: "Finished"; readonly result: BashResult }

/**
 * A finished call: how it ended as data (`parts`) and as the text a model reads
 * (`text = StatusLines.render(parts)`, the one Schema, so `StatusLines.parse(text)` gives `parts`
 * back), or the executor's own failure.
 */
export type BashResult = BashCompleted | BashFailed

export interface BashCompleted {
  readonly _tag: "Completed"
  readonly parts: ResultParts
  readonly text: string
  /** The absolute directory the command ran in. */
  readonly cwd: string
}

/** The executor failed while running the call (its processes were killed); `text` says so in words. */
export interface BashFailed {
  readonly _tag: "Failed"
  readonly error: BashError
  readonly text: string
  readonly cwd: string
}

export interface RunOptions {
  /** Completes when the caller wants the command stopped (ACP `session/cancel`): the kill sequence runs and `Finished` still comes. */
  readonly cancel?: Effect.Effect<void>
}

export interface TaskInfo {
  readonly id: string
  readonly command: string
  readonly cwd: string
  readonly startedAt: number
  /** Absent while running; the rendered final result once the task ended. */
  readonly result?: BashResult
}

export interface BackgroundTask {
  readonly info: TaskInfo
  /** What the starter returns at once: output of the first moments, then `[background task <id> started]` (or the exit if it died at once). */
  readonly started: BashResult
  /** Every output chunk from the start, then `Finished` with the task's exit line. One consumer. */
  readonly events: Stream.Stream<RunEvent>
}

/** New output of a task since the previous read, with a cursor per task. */
export interface TaskOutput {
  readonly info: TaskInfo
  /** ANSI-stripped, bounded like a foreground result. */
  readonly output: string
  readonly running: boolean
}

export class BashError extends Data.TaggedError("BashError")<{
  /** `Internal`: the executor itself failed while running a call (a bug, or the host failing it); the call's processes are killed. */
  readonly reason: "SpawnFailed" | "BadWorkdir" | "TooManyTasks" | "TaskNotFound" | "SandboxUnavailable" | "Internal"
  readonly message: string
}> {}

export interface BashSession {
  /** The session's current directory (moved by `cd` in foreground commands). */
  readonly cwd: Effect.Effect<string>
  /** Runs a foreground command. Interrupting the stream's consumer runs the kill sequence too. */
  readonly run: (request: RunRequest, options?: RunOptions) => Stream.Stream<RunEvent, BashError>
  /** Starts a background task owned by this session (at most 16 live). */
  readonly start: (request: RunRequest) => Effect.Effect<BackgroundTask, BashError>
  readonly list: Effect.Effect<ReadonlyArray<TaskInfo>>
  readonly read: (id: string) => Effect.Effect<TaskOutput, BashError>
  readonly kill: (id: string) => Effect.Effect<TaskInfo, BashError>
  /** The profile the next command (foreground or background) runs under (`Sandbox.ts`). */
  readonly profile: Effect.Effect<SandboxProfile>
  /**
   * Sets the profile of the next commands (running ones keep theirs). Fails with
   * `SandboxUnavailable` for a sandboxed profile where bwrap cannot make it; the profile is unchanged.
   */
  readonly setProfile: (profile: SandboxProfile) => Effect.Effect<void, BashError>
  /** Whether the sandboxed profiles work here (a probe, once per executor), and if not why. */
  readonly sandbox: Effect.Effect<SandboxSupport>
}

/** The part of a session that sets its commands' sandbox profile (what a mode switch moves). */
export type SandboxControl = Pick<BashSession, "profile" | "setProfile" | "sandbox">

export interface BashConfig {
  readonly defaultTimeoutMs: number
  /** Model-text budget in characters (head one third, tail two thirds). */
  readonly maxOutputChars: number
  /** Cap of the full-output file written when the model text is truncated. */
  readonly fullOutputMaxBytes: number
  /** Names restored after the secret scrub. */
  readonly envAllow: ReadonlyArray<string>
  readonly maxTasks: number
  /** Where full-output files go. */
  readonly tempDir: string
  /**
   * How a command's processes are contained (default `"auto"`):
   * - `"bwrap"`: each command in its own pid namespace (`bwrap --unshare-pid`): a `setsid`
   *   grandchild is killed with the rest, and nothing survives the agent, even a SIGKILLed one;
   * - `"process-group"`: each command leads its own process group (what `kill(-pgid)` reaches);
   * - `"auto"`: `"bwrap"` when a probe at start shows it works here, else `"process-group"`.
   */
  readonly containment?: ContainmentMode
  /**
   * The profile a session starts in (default `"full"`). A sandboxed one where bwrap cannot make it
   * starts the session in `"full"`, and says so in the log.
   */
  readonly sandbox?: SandboxProfile
  /** The `workspace` profile may reach the network (default: no network). */
  readonly allowNetwork?: boolean
}

export type ContainmentMode = "auto" | "bwrap" | "process-group"

/** Limits of the executor that its config does not set; the tools state them next to the config's figures. */
export interface BashLimits {
  /** The most a call's `timeout_ms` may ask for (a larger value is clamped, and the clamp is said). */
  readonly maxTimeoutMs: number
  /** SIGTERM to the process tree, this long, then SIGKILL. */
  readonly killGraceMs: number
}

export class Bash extends Context.Tag("dsh-acp/Bash/Bash")<Bash, {
  /**
   * The configuration in effect (defaults merged) and the fixed limits: what the tool descriptions
   * tell the model, so they can never disagree with what the executor does.
   */
  readonly config: BashConfig & BashLimits
  /**
   * Starts in the background what a first session waits for (the `auto` containment probe, which
   * also tells whether the sandbox profiles work: a bwrap run of tens of ms) and returns at once.
   * For a caller that knows a session is coming; without it the first session starts it. Optional
   * for an executor of your own.
   */
  readonly prepare?: Effect.Effect<void>
  /** A shell for one session, starting in `cwd` (absolute). */
  readonly session: (options: {
    readonly cwd: string
    /** More directories the `workspace` profile may write (ACP `additionalDirectories`). */
    readonly additionalDirectories?: ReadonlyArray<string> | undefined
  }) => Effect.Effect<BashSession, never, Scope.Scope>
}>() {}
