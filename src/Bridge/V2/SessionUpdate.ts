/**
 * The plain-JSON shapes of the ACP v2 `session/update` params this agent sends. Types and small
 * builders only: tests validate real payloads against the official v2 JSON Schema.
 *
 * v2 differs from v1 where it matters here: a tool call is created and patched by
 * `tool_call_update` alone (omitted = unchanged, `null` = cleared); a terminal is agent-owned state
 * (`terminal_update`, a patch too) whose bytes come as base64 `terminal_output_chunk`s; message
 * chunks carry a `messageId`; the turn is a `state_update`.
 */
import type { FileDiff } from "../../Presentation/Intent.js"
import { textBlock, type TextBlock } from "../SessionUpdate.js"
import * as GitPatch from "./GitPatch.js"

export type ToolCallContent =
  | { readonly type: "content"; readonly content: TextBlock }
  | { readonly type: "terminal"; readonly terminalId: string }
  | {
    readonly type: "diff"
    readonly changes: ReadonlyArray<{ readonly operation: GitPatch.Operation; readonly path: string; readonly fileType: "text" }>
    readonly patch: { readonly format: "git_patch"; readonly text: string }
  }

export interface ToolCallLocation {
  readonly path: string
  readonly line?: number
}

/** `{}` advertises a control; `null` clears every control. */
export type Capabilities = { readonly cancel?: Record<string, never> } | null

export interface ToolCallUpdate {
  readonly sessionUpdate: "tool_call_update"
  readonly toolCallId: string
  readonly title?: string
  readonly kind?: string
  readonly status?: "pending" | "in_progress" | "completed" | "failed" | "cancelled"
  readonly content?: ReadonlyArray<ToolCallContent>
  readonly locations?: ReadonlyArray<ToolCallLocation>
  readonly rawInput?: unknown
  readonly rawOutput?: unknown
  readonly capabilities?: Capabilities
}

export interface ExitStatus {
  readonly exitCode: number | null
  readonly signal: string | null
}

export interface TerminalUpdate {
  readonly sessionUpdate: "terminal_update"
  readonly terminalId: string
  readonly command?: string
  readonly cwd?: string
  /** An authoritative snapshot: REPLACES what the client holds. */
  readonly output?: { readonly data: string }
  /** Its presence ends the terminal. */
  readonly exitStatus?: ExitStatus
  readonly capabilities?: Capabilities
}

export interface TerminalOutputChunk {
  readonly sessionUpdate: "terminal_output_chunk"
  readonly terminalId: string
  /** Base64 of the bytes to append. */
  readonly data: string
}

/** Appends one content item to a call's content. */
export interface ToolCallContentChunk {
  readonly sessionUpdate: "tool_call_content_chunk"
  readonly toolCallId: string
  readonly content: ToolCallContent
}

export interface MessageChunk {
  readonly sessionUpdate: "agent_message_chunk" | "agent_thought_chunk"
  readonly messageId: string
  readonly content: TextBlock
}

export type BackgroundWork = { readonly type: "terminal"; readonly terminalId: string }

export type StateUpdate =
  | { readonly sessionUpdate: "state_update"; readonly state: "running"; readonly background?: ReadonlyArray<BackgroundWork> }
  | {
    readonly sessionUpdate: "state_update"
    readonly state: "idle"
    readonly stopReason?: string
    readonly background?: ReadonlyArray<BackgroundWork>
  }

export type SessionUpdate = ToolCallUpdate | ToolCallContentChunk | TerminalUpdate | TerminalOutputChunk | MessageChunk | StateUpdate

export interface SessionNotification {
  readonly sessionId: string
  readonly update: SessionUpdate
}

export const CANCEL: Capabilities = { cancel: {} }

export const textContent = (text: string): ToolCallContent => ({ type: "content", content: textBlock(text) })
export const terminalContent = (terminalId: string): ToolCallContent => ({ type: "terminal", terminalId })

/** A file's change as v2 diff content: the operation, and the change as a git patch. */
export const diffContent = (diff: FileDiff): ToolCallContent => ({
  type: "diff",
  changes: [{ operation: GitPatch.operationOf(diff), path: diff.path, fileType: "text" }],
  patch: { format: "git_patch", text: GitPatch.render(diff) }
})
