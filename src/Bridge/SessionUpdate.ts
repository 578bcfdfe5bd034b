/**
 * The plain-JSON shapes of the ACP `session/update` params the mapper produces — the subset of the
 * ACP v1 `SessionNotification` this agent sends. Types only: tests validate real payloads against
 * the official JSON Schema, which stays the authority.
 */

export interface TextBlock {
  readonly type: "text"
  readonly text: string
}

export type ToolCallContent =
  | { readonly type: "content"; readonly content: TextBlock }
  | { readonly type: "terminal"; readonly terminalId: string }
  | { readonly type: "diff"; readonly path: string; readonly oldText: string | null; readonly newText: string }

export interface ToolCallLocation {
  readonly path: string
  readonly line?: number
}

export type ToolCallStatus = "pending" | "in_progress" | "completed" | "failed"

export type Meta = Readonly<Record<string, unknown>>

export interface ToolCall {
  readonly sessionUpdate: "tool_call"
  readonly toolCallId: string
  readonly title: string
  readonly kind: string
  readonly status: ToolCallStatus
  readonly content: ReadonlyArray<ToolCallContent>
  readonly locations?: ReadonlyArray<ToolCallLocation>
  readonly rawInput?: unknown
  readonly _meta?: Meta
}

export interface ToolCallUpdate {
  readonly sessionUpdate: "tool_call_update"
  readonly toolCallId: string
  readonly status?: ToolCallStatus
  /** Replaces the card's whole content list when present. */
  readonly content?: ReadonlyArray<ToolCallContent>
  readonly locations?: ReadonlyArray<ToolCallLocation>
  readonly rawOutput?: unknown
  readonly _meta?: Meta
}

export interface MessageChunk {
  readonly sessionUpdate: "agent_message_chunk" | "agent_thought_chunk"
  readonly content: TextBlock
}

export type SessionUpdate = ToolCall | ToolCallUpdate | MessageChunk

/** The params of one `session/update` notification. */
export interface SessionNotification {
  readonly sessionId: string
  readonly update: SessionUpdate
}

export const textBlock = (text: string): TextBlock => ({ type: "text", text })
export const textContent = (text: string): ToolCallContent => ({ type: "content", content: textBlock(text) })
export const terminalContent = (terminalId: string): ToolCallContent => ({ type: "terminal", terminalId })
export const diffContent = (diff: { readonly path: string; readonly oldText: string | null; readonly newText: string }): ToolCallContent => ({
  type: "diff",
  path: diff.path,
  oldText: diff.oldText,
  newText: diff.newText
})
