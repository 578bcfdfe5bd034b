/**
 * The life of one tool call's card, as any harness reports it and any UI draws it: started (with
 * its call intent), running, output chunks, completed (with its result intent), in that order,
 * and possibly the files it changed once it has ended.
 */
import * as Data from "effect/Data"
import type { CallIntent, ChangedFiles, ResultIntent } from "./Intent.js"

export type CardEvent = Data.TaggedEnum<{
  /** A call opens its card: `pending` while waiting for permission, else running. */
  ToolCallStarted: { readonly callId: string; readonly presentation: CallIntent; readonly pending: boolean }
  /** A pending call starts running. */
  ToolCallRunning: { readonly callId: string }
  /** Raw output of a running call, in arrival order. */
  ToolOutput: { readonly callId: string; readonly data: string }
  /** The call ended; its card gets its final update. */
  ToolCallCompleted: { readonly callId: string; readonly presentation: ResultIntent }
  /** After the end: the files the call changed, added to its card (never delays the end itself). */
  ToolCallFilesChanged: { readonly callId: string; readonly changed: ChangedFiles }
}>

export const CardEvent = Data.taggedEnum<CardEvent>()
