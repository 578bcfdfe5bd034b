/**
 * The display budget of one v1 terminal card, as text: a {@link DisplayBudget} that never cuts
 * inside a character, fed with the text the card shows and, when the caller has them, the bytes it
 * was decoded from (the executor reads them from the pipe; with them a chunk is never encoded, and
 * its text is read only when the card shows all of it: past the head, never).
 */
import { DEFAULT_DISPLAY_BUDGET_BYTES, DisplayBudget, skippedNote } from "./DisplayBudget.js"

export { DEFAULT_DISPLAY_BUDGET_BYTES, skippedNote } from "./DisplayBudget.js"

export const byteLength = (text: string): number => Buffer.byteLength(text, "utf8")

/** An output chunk: its text and, when known, the bytes it was decoded from (`data` may be decoded only when read). */
export interface OutputChunk {
  readonly data: string
  readonly bytes?: Uint8Array | undefined
}

const decode = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8")

export class LiveOutput {
  private readonly budget: DisplayBudget

  /**
   * @param budgetBytes the most the card ever shows (the skip note aside)
   * @param tailBytes how much of the end is kept once the head is used up (default: an eighth of the budget)
   */
  constructor(budgetBytes: number = DEFAULT_DISPLAY_BUDGET_BYTES, tailBytes: number = Math.floor(budgetBytes / 8)) {
    this.budget = new DisplayBudget(budgetBytes, tailBytes, true)
  }

  /** Whether any chunk at all was pushed (empty chunks do not count). */
  get received(): boolean {
    return this.budget.received
  }

  /**
   * Takes a chunk (text, or a chunk with the bytes it was decoded from); returns the part that may
   * be shown now. A chunk's `data` is read only when all of it is shown.
   */
  push(chunk: string | OutputChunk): string {
    const bytes = typeof chunk === "string" ? undefined : chunk.bytes
    if (bytes === undefined) {
      const data = typeof chunk === "string" ? chunk : chunk.data
      if (data === "") return ""
      const all = Buffer.from(data, "utf8")
      const shown = this.budget.push(all)
      return shown.length === all.length ? data : decode(shown)
    }
    if (bytes.length === 0) return ""
    const shown = this.budget.push(bytes)
    return shown.length === 0 ? "" : shown.length === bytes.length ? (chunk as OutputChunk).data : decode(shown)
  }

  /** Ends the stream: the skip note (when bytes were skipped) and the kept tail. */
  finish(): string {
    const { skipped, tail } = this.budget.finish()
    return skipped > 0 ? skippedNote(skipped) + decode(tail) : decode(tail)
  }

  /** Bytes that will never be shown. */
  get skipped(): number {
    return this.budget.skipped
  }
}
