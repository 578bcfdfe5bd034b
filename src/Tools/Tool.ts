/**
 * A tool: what a model sees (name, description, parameters), what runs (a handler) and how it
 * looks (a presenter). The model harness runs any set of tools; the bash tools are one such set,
 * an embedder's read or edit tool another, and both render through the same bridge.
 *
 * Presenters are pure functions of the arguments and of the result the model reads (its text and
 * whether it failed), so a session log replayed later gives the same cards.
 */
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { SandboxControl } from "../Bash/Bash.js"
import type { CardEvent } from "../Presentation/CardEvent.js"
import type { CallIntent, ChangedFiles, ResultIntent } from "../Presentation/Intent.js"

export interface PresentContext {
  /** The session's directory when the call started: relative paths resolve against it. */
  readonly cwd: string
}

export interface ResultContext extends PresentContext {
  /** Whether the call failed as the model was told (a tool result's `isFailure`). */
  readonly isFailure: boolean
}

export interface Presenter<Args> {
  readonly presentCall: (args: Args, context: PresentContext) => CallIntent
  readonly presentResult: (args: Args, result: string, context: ResultContext) => ResultIntent
}

export interface ToolContext extends PresentContext {
  /** The call's id (its card's id). */
  readonly callId: string
  /**
   * Streams raw output into the call's card: a terminal intent shows it live. `bytes`, when the
   * tool has them, are the exact bytes `data` was decoded from (shown as they are by a client that
   * takes bytes).
   */
  readonly output: (data: string, bytes?: Uint8Array) => Effect.Effect<void>
  /** Completes when the user cancels the turn or this call alone: stop, and still return a result. */
  readonly cancel: Effect.Effect<void>
}

/** What a call gives back: the text the model reads (the presenter renders the same text). */
export interface ToolOutcome {
  readonly text: string
  readonly isFailure: boolean
  /**
   * The files the call changed, for its card only (the model is not told): run after the card's
   * end has been reported, so it never delays it.
   */
  readonly changedFiles?: Effect.Effect<ChangedFiles>
}

export interface Tool<Args = any> extends Presenter<Args> {
  readonly name: string
  readonly description: string
  readonly parameters: Schema.Schema<Args, any>
  /** Whether a model harness asks the user before running a call (default: it asks). */
  readonly requiresPermission?: (args: Args) => boolean
  /**
   * The call runs under the session's sandbox profile (see {@link SessionTools.sandbox}), so a
   * sandboxed mode may run it without asking. Other tools keep asking whatever the mode.
   */
  readonly sandboxed?: boolean
  readonly handle: (args: Args, context: ToolContext) => Effect.Effect<ToolOutcome>
}

/** Infers `Args` from the parameters Schema. */
export const make = <Args>(tool: Tool<Args>): Tool<Args> => tool

/** A set of tools bound to one session. */
export interface SessionTools {
  readonly tools: ReadonlyArray<Tool>
  /** The directory the session is in now (a bash `cd` moves it). */
  readonly cwd: Effect.Effect<string>
  /** Cards of work that outlives its call (background tasks), which may end between turns. */
  readonly background: Stream.Stream<CardEvent>
  /** The sandbox profile of the session's `sandboxed` tools, when the set has one (the bash tools). */
  readonly sandbox?: SandboxControl
}

/** Tools for a session; `open` may hold per-session state (a shell) in the session's scope. */
export interface Toolset<R = never> {
  /** Starts in the background what the set's first session will wait for (see `Harness.prepare`). */
  readonly prepare?: Effect.Effect<void, never, R>
  readonly open: (session: {
    readonly cwd: string
    /** More directories of the project (ACP `additionalDirectories`), writable in a workspace sandbox. */
    readonly additionalDirectories?: ReadonlyArray<string> | undefined
  }) => Effect.Effect<SessionTools, never, R | Scope.Scope>
}

/** Tools without per-session state; the session's directory is the one it was opened in. */
export const toolset = (...tools: ReadonlyArray<Tool>): Toolset => ({
  open: ({ cwd }) => Effect.succeed({ tools, cwd: Effect.succeed(cwd), background: Stream.empty })
})

/** Several sets as one: their tools in order, the FIRST set's directory, every background stream, the first sandbox. */
export const merge = <R>(first: Toolset<R>, ...rest: ReadonlyArray<Toolset<R>>): Toolset<R> => ({
  prepare: Effect.forEach([first, ...rest], (set) => set.prepare ?? Effect.void, { discard: true }),
  open: (session) =>
    Effect.map(Effect.all([first, ...rest].map((set) => set.open(session))), ([head, ...tail]) => ({
      tools: [head!, ...tail].flatMap((s) => s.tools),
      cwd: head!.cwd,
      background: Stream.mergeAll([head!, ...tail].map((s) => s.background), { concurrency: "unbounded" }),
      ...sandboxOf([head!, ...tail])
    }))
})

const sandboxOf = (sets: ReadonlyArray<SessionTools>): { readonly sandbox?: SandboxControl } => {
  const sandbox = sets.find((s) => s.sandbox !== undefined)?.sandbox
  return sandbox === undefined ? {} : { sandbox }
}
