/**
 * The life of one tool call's card, as any harness reports it and any UI draws it: started (with
 * its call intent), running, output chunks, completed (with its result intent), in that order.
 */
import * as Data from "effect/Data"
import type { CallIntent, ResultIntent } from "./Intent.js"

export type CardEvent = Data.TaggedEnum<{
  /** A call opens its card: `pending` while waiting for permission, else running. */
  ToolCallStarted: { readonly callId: string; readonly presentation: CallIntent; readonly pending: boolean }
  /** A pending call starts running. */
  ToolCallRunning: { readonly callId: string }
  /** Raw output of a running call, in arrival order. */
  ToolOutput: { readonly callId: string; readonly data: string }
  /** The call ended; its card gets its final update. */
  ToolCallCompleted: { readonly callId: string; readonly presentation: ResultIntent }
}>

export const CardEvent = Data.taggedEnum<CardEvent>()
