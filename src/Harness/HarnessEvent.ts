/**
 * What a harness reports during a prompt turn (and afterwards, for background work). The bridge
 * maps these to ACP `session/update`s; it never runs tools or parses their output itself.
 */
import * as Data from "effect/Data"
import type { CallPresentation, ResultPresentation } from "../Presentation/Presentation.js"

export type StopReason = "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled"

export type HarnessEvent = Data.TaggedEnum<{
  /** Text for the user (streams as `agent_message_chunk`). */
  AgentText: { readonly text: string }
  /** Reasoning (streams as `agent_thought_chunk`). */
  AgentThought: { readonly text: string }
  /** A tool call opens its card. `pending` while waiting for permission, else running. */
  ToolCallStarted: { readonly callId: string; readonly presentation: CallPresentation; readonly pending: boolean }
  /** A pending call starts running. */
  ToolCallRunning: { readonly callId: string }
  /** Raw output of a running call, in arrival order. */
  ToolOutput: { readonly callId: string; readonly data: string }
  /** The call ended; its card gets its final update. */
  ToolCallCompleted: { readonly callId: string; readonly presentation: ResultPresentation }
  /** The turn is over (the last event of a prompt stream). */
  TurnEnded: { readonly stopReason: StopReason }
}>

export const HarnessEvent = Data.taggedEnum<HarnessEvent>()
