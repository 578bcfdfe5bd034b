/**
 * The seam between the bridge and whatever drives tools: the default shell harness, the model
 * harness, or an embedder's own. The bridge consumes events; the harness executes.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Deferred from "effect/Deferred"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { CallIntent } from "../Presentation/Intent.js"
import type { HarnessEvent } from "./HarnessEvent.js"

/** A prompt's content, reduced to what a harness can act on. */
export type PromptBlock =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Other"; readonly type: string }

export interface SlashCommand {
  readonly name: string
  readonly description: string
  readonly hint?: string
}

export interface PromptOptions {
  /** Completed when the client cancels the turn: stop running commands, emit their final events, then `TurnEnded("cancelled")`. */
  readonly cancel: Deferred.Deferred<void>
}

/** A mode the user can pick for a session (shown by the bridge as ACP session modes and a `mode` config option). */
export interface SessionMode {
  readonly id: string
  readonly name: string
  readonly description: string
}

export class UnknownMode extends Data.TaggedError("UnknownMode")<{ readonly modeId: string; readonly message: string }> {}

/** The session's modes: what its commands may touch, and whether they ask first. */
export interface SessionModes {
  readonly available: ReadonlyArray<SessionMode>
  readonly current: Effect.Effect<string>
  /** Switches the mode; the next command runs under it. An id not in `available` fails, the mode unchanged. */
  readonly set: (modeId: string) => Effect.Effect<void, UnknownMode>
  /** Why some modes are not offered here (e.g. no working sandbox), for the user. */
  readonly note?: string
}

export interface HarnessSession {
  /** One turn: events in order, ending with `TurnEnded`. */
  readonly prompt: (blocks: ReadonlyArray<PromptBlock>, options: PromptOptions) => Stream.Stream<HarnessEvent>
  /** Events of background work, which may arrive between turns (e.g. a background card finishing). */
  readonly background: Stream.Stream<HarnessEvent>
  readonly commands: ReadonlyArray<SlashCommand>
  /** The session's modes, when the harness has any. */
  readonly modes?: SessionModes
  /**
   * What the harness needs to continue this session in another process (read after each turn, for
   * a persisted session). Optional: a harness without it restarts from the session's cwd.
   */
  readonly snapshot?: Effect.Effect<HarnessState>
}

/** A harness session's state, as `snapshot` reports it and `SessionContext.restore` gives it back. */
export interface HarnessState {
  /** The shell's current directory (moved by `cd`), absolute. */
  readonly cwd: string
  /**
   * The harness's own memory (the model harness: its history), as JSON values that only grow: each
   * snapshot returns all of it, and the store keeps what is new.
   */
  readonly memory: ReadonlyArray<unknown>
}

/** A session reopened from its log (`session/load`, `session/resume`), under the same id. */
export interface HarnessRestore extends HarnessState {
  /** Card ids the session already used: a restored session never reuses one. */
  readonly callIds: ReadonlyArray<string>
}

/** The user's answer to a permission request; `cancelled` when the turn was cancelled meanwhile. */
export type PermissionDecision = "allow_once" | "allow_always" | "reject" | "cancelled"

/** What the bridge offers a harness session: asking the user (ACP `session/request_permission`). */
export interface ClientAccess {
  /** Asks before running a call; the card of `callId` should be open as `pending`. */
  readonly requestPermission: (request: {
    readonly callId: string
    readonly presentation: CallIntent
  }) => Effect.Effect<PermissionDecision>
}

export interface SessionContext {
  readonly sessionId: string
  readonly cwd: string
  /** More directories of the project (ACP `additionalDirectories`), writable in a workspace sandbox. */
  readonly additionalDirectories?: ReadonlyArray<string>
  readonly client: ClientAccess
  /** Present when the session is reopened from its log: continue from this state. */
  readonly restore?: HarnessRestore
}

export class Harness extends Context.Tag("dsh-acp/Harness/Harness")<Harness, {
  /**
   * Starts in the background what the first session will wait for, returning at once: the bridge
   * calls it when `initialize` has been answered, since a client opens a session next.
   */
  readonly prepare?: Effect.Effect<void>
  /** Opens a session; closing the scope ends everything it owns (tasks, history). */
  readonly openSession: (context: SessionContext) => Effect.Effect<HarnessSession, never, Scope.Scope>
}>() {}
