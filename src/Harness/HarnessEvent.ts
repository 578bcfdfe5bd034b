/**
 * What a harness reports during a prompt turn (and afterwards, for background work): the cards of
 * its tool calls (`CardEvent`), the agent's words, the end of the turn. The bridge maps these to
 * ACP `session/update`s; it never runs tools or parses their output itself.
 */
import * as Data from "effect/Data"
import type { CardEvent } from "../Presentation/CardEvent.js"

export type StopReason = "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled"

export type HarnessEvent =
  | CardEvent
  | Data.TaggedEnum<{
    /** Text for the user (streams as `agent_message_chunk`). */
    AgentText: { readonly text: string }
    /** Reasoning (streams as `agent_thought_chunk`). */
    AgentThought: { readonly text: string }
    /** The turn is over (the last event of a prompt stream). */
    TurnEnded: { readonly stopReason: StopReason }
  }>

export const HarnessEvent = Data.taggedEnum<HarnessEvent>()
