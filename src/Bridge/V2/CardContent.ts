/**
 * The v2 content of a call: what it shows when it starts and when it ends, and the small wire
 * conversions the v2 mapper needs (exit status, base64 of raw bytes).
 */
import * as Intent from "../../Presentation/Intent.js"
import type { ExitStatus } from "../../Terminal/ExitStatus.js"
import { consoleFence } from "../ConsoleFence.js"
import { diffContent, type ExitStatus as WireExit, terminalContent, textContent, type ToolCallContent } from "./SessionUpdate.js"

export const texts = (content: ReadonlyArray<Intent.Text>) => content.map((c) => textContent(c.text))
export const locationsOf = (locations: ReadonlyArray<Intent.Location>) => (locations.length === 0 ? {} : { locations })

export const callBody = (call: Intent.CallIntent): Array<ToolCallContent> =>
  call._tag === "Diff" ? call.diffs.map(diffContent) : texts(call.content)

export const exitStatusOf = (exit: ExitStatus | undefined): WireExit => ({
  exitCode: exit?._tag === "Exited" ? exit.code : null,
  signal: exit?._tag === "Signaled" ? exit.signal : null
})

export const base64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")

/**
 * The content a call ends with, or undefined to leave it as it is (patch semantics): a terminal
 * keeps its content; a call that had none shows a terminal result as text.
 */
export const finalContent = (
  terminal: boolean,
  callTexts: ReadonlyArray<ToolCallContent>,
  callId: string,
  result: Intent.ResultIntent
): ReadonlyArray<ToolCallContent> | undefined => {
  const withTerminal = (body: ReadonlyArray<ToolCallContent>) => (terminal ? [...body, terminalContent(callId)] : body)
  switch (result._tag) {
    case "Terminal":
      return terminal ? undefined : [...callTexts, textContent(consoleFence(Intent.transcript(result)))]
    case "Generic":
      return withTerminal(texts(result.content))
    case "Diff":
      return withTerminal(result.diffs.map(diffContent))
  }
}
