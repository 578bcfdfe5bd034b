/**
 * The seam between the bridge and whatever drives tools: the default shell harness, the model
 * harness, or an embedder's own. The bridge consumes events; the harness executes.
 */
import * as Context from "effect/Context"
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

export interface HarnessSession {
  /** One turn: events in order, ending with `TurnEnded`. */
  readonly prompt: (blocks: ReadonlyArray<PromptBlock>, options: PromptOptions) => Stream.Stream<HarnessEvent>
  /** Events of background work, which may arrive between turns (e.g. a background card finishing). */
  readonly background: Stream.Stream<HarnessEvent>
  readonly commands: ReadonlyArray<SlashCommand>
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
  readonly client: ClientAccess
}

export class Harness extends Context.Tag("dsh-acp/Harness/Harness")<Harness, {
  /** Opens a session; closing the scope ends everything it owns (tasks, history). */
  readonly openSession: (context: SessionContext) => Effect.Effect<HarnessSession, never, Scope.Scope>
}>() {}
