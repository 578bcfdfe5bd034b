/**
 * The life of one tool call's card, as any harness reports it and any UI draws it: started (with
 * its call intent), running, output chunks, completed (with its result intent), in that order,
 * and possibly the files it changed once it has ended.
 */
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type { CallIntent, ChangedFiles, ResultIntent } from "./Intent.js"

export type CardEvent = Data.TaggedEnum<{
  /**
   * A call opens its card: `pending` while waiting for permission, else running. `cancel`, when
   * the harness offers it, stops this call alone (a command gets the kill sequence) and returns at
   * once; the call still ends with its own `ToolCallCompleted`, and the turn goes on. A UI with a
   * per-call Stop button (ACP v2's `terminal/cancel`) calls it; others ignore it.
   */
  ToolCallStarted: {
    readonly callId: string
    readonly presentation: CallIntent
    readonly pending: boolean
    readonly cancel?: Effect.Effect<void>
  }
  /** A pending call starts running. */
  ToolCallRunning: { readonly callId: string }
  /**
   * Raw output of a running call, in arrival order. `bytes`, when the harness has them, are the
   * exact bytes `data` was decoded from (a UI that shows bytes, such as ACP v2's terminals, sends
   * them as they were; one that shows text uses `data`).
   */
  ToolOutput: { readonly callId: string; readonly data: string; readonly bytes?: Uint8Array }
  /** The call ended; its card gets its final update. */
  ToolCallCompleted: { readonly callId: string; readonly presentation: ResultIntent }
  /** After the end: the files the call changed, added to its card (never delays the end itself). */
  ToolCallFilesChanged: { readonly callId: string; readonly changed: ChangedFiles }
}>

export const CardEvent = Data.taggedEnum<CardEvent>()

/**
 * A `ToolOutput` of `source`'s bytes whose `data` is read from `source` only when something reads
 * it (the constructor above would read it at once): past a card's head nothing does, and the
 * executor decodes its text only then (see the executor's output events).
 */
class SourcedOutput {
  readonly _tag = "ToolOutput" as const
  constructor(readonly callId: string, readonly bytes: Uint8Array, private readonly source: { readonly data: string }) {}
  get data(): string {
    return this.source.data
  }
}

/** The `ToolOutput` of an output chunk, its text read from it when needed. */
export const toolOutputOf = (callId: string, source: { readonly data: string; readonly bytes?: Uint8Array | undefined }): CardEvent =>
  source.bytes === undefined ? CardEvent.ToolOutput({ callId, data: source.data }) : new SourcedOutput(callId, source.bytes, source)
