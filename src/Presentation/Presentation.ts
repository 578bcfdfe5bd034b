/**
 * The provider-neutral vocabulary a tool uses to describe its call and its result: what a second
 * UI (a TUI, a web page) would also want. No ACP types here; `Bridge/Mapping` owns the wire.
 */
import type { ExitStatus } from "../Bash/ExitStatus.js"

export type ToolKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "other"

export interface TextContent {
  readonly _tag: "Text"
  readonly text: string
}

export const text = (value: string): TextContent => ({ _tag: "Text", text: value })

/** How a call is shown when it starts. `terminal` asks for a terminal-shaped card in `cwd`. */
export interface CallPresentation {
  readonly title: string
  readonly kind: ToolKind
  readonly content: ReadonlyArray<TextContent>
  readonly terminal?: { readonly cwd: string }
  /** The arguments, shown to clients as `rawInput`. */
  readonly input?: unknown
}

/** The terminal side of a finished call. */
export interface TerminalResult {
  /** The command's output (what the card shows when nothing was streamed live). */
  readonly output: string
  readonly exit: ExitStatus
  /** The whole rendered result, status lines included: the text fallback shows this. */
  readonly transcript: string
}

/** How a call is shown when it ends. */
export interface ResultPresentation {
  readonly status: "completed" | "failed"
  /** The call's content again (a result replaces the content list), then any result content. */
  readonly content: ReadonlyArray<TextContent>
  readonly terminal?: TerminalResult
  /** Small structured facts (exit code, signal, truncation): never the output again. */
  readonly facts?: Readonly<Record<string, unknown>>
}
