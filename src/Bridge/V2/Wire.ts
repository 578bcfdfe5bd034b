/**
 * ACP v2 (draft, schema v2.0.0-alpha) on this agent: the version negotiation and the params of the
 * v2-only requests, as Schemas decoded at the JSON-RPC edge. Field names follow the official
 * `schema/v2/schema.json` of `@agentclientprotocol/sdk` (tests validate every line against it).
 * The requests v1 and v2 share (`session/new`, `session/prompt`, `session/cancel`,
 * `session/close`) decode with the v1 Schemas in `../Wire.ts`: their params did not change.
 */
import * as Schema from "effect/Schema"
import { lenient, Meta, SessionId } from "../Wire.js"

export const PROTOCOL_VERSION = 2

/** The version to speak: the client's highest offer, at most ours. Below 2, today's v1. */
export const negotiate = (offered: number): 1 | 2 => (offered >= PROTOCOL_VERSION ? 2 : 1)

export const CancelTerminalParams = Schema.Struct({
  sessionId: SessionId,
  terminalId: Schema.String,
  _meta: lenient(Meta)
})
export type CancelTerminalParams = typeof CancelTerminalParams.Type

export const CancelToolCallParams = Schema.Struct({
  sessionId: SessionId,
  toolCallId: Schema.String,
  _meta: lenient(Meta)
})
export type CancelToolCallParams = typeof CancelToolCallParams.Type

export const Method = {
  terminalCancel: "terminal/cancel",
  toolCallCancel: "tool_call/cancel"
} as const
