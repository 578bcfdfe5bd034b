/**
 * The ACP content of a card: what a call shows when it starts, when it ends, and when the files it
 * changed follow its end — for each form a client can show (terminal card, text fallback, plain).
 */
import * as Intent from "../Presentation/Intent.js"
import { consoleFence } from "./ConsoleFence.js"
import { diffContent, terminalContent, textContent, type ToolCallContent } from "./SessionUpdate.js"

/** How a call is shown, fixed when it starts. */
export type Form =
  | { readonly _tag: "Card"; readonly outputKey: "terminal_output" | "terminal_output_delta" }
  | { readonly _tag: "Text" }
  | { readonly _tag: "Plain" }

export const texts = (content: ReadonlyArray<Intent.Text>): Array<ToolCallContent> => content.map((c) => textContent(c.text))
export const diffs = (changes: ReadonlyArray<Intent.FileDiff>): Array<ToolCallContent> => changes.map(diffContent)
export const locationsOf = (locations: ReadonlyArray<Intent.Location>) => (locations.length === 0 ? {} : { locations })

/** What a call shows when it starts, before any terminal block. */
export const callBody = (call: Intent.CallIntent): Array<ToolCallContent> => {
  switch (call._tag) {
    case "Terminal":
    case "Generic":
      return texts(call.content)
    case "Diff":
      return diffs(call.diffs)
  }
}

/**
 * The content a finished call shows. `started` is what its `tool_call` sent (terminal block
 * included on a card) and `callTexts` its own text content.
 */
export const finalContent = (
  form: Form,
  started: { readonly content: ReadonlyArray<ToolCallContent>; readonly callTexts: ReadonlyArray<ToolCallContent> },
  callId: string,
  result: Intent.ResultIntent
): ReadonlyArray<ToolCallContent> => {
  // A card keeps its terminal block last whatever the result (an update's content replaces the
  // list, and the terminal must stay on the card).
  const onCard = (body: ReadonlyArray<ToolCallContent>) => (form._tag === "Card" ? [...body, terminalContent(callId)] : body)
  switch (result._tag) {
    case "Terminal":
      return form._tag === "Card"
        ? started.content
        : form._tag === "Text"
        ? [textContent(consoleFence(Intent.transcript(result)))]
        // A call that started without a terminal may still end with one (a background start that
        // died at once): it is shown as text, since the client never saw a terminal id.
        : [...started.callTexts, textContent(consoleFence(Intent.transcript(result)))]
    case "Generic":
      return onCard(texts(result.content))
    case "Diff":
      return onCard(diffs(result.diffs))
  }
}

/** The files a call changed, as content that follows the call's own. */
export const changedContent = (changed: Intent.ChangedFiles): Array<ToolCallContent> => [
  ...diffs(changed.diffs),
  ...texts(changed.notes)
]
