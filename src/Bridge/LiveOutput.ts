/**
 * The display budget of one terminal card. A command may print gigabytes; the card (and the
 * client's memory) gets at most `budgetBytes` of it: the head live, then — once past the head —
 * a rolling tail of the most recent bytes, emitted at the end after one line saying how many bytes
 * were skipped. Every byte that is shown is shown once, in order, so a client appending `data`
 * reconstructs exactly head + note + tail.
 *
 * Mutable on purpose: it lives inside one call's state in the mapper and is only touched under the
 * mapper's lock; copying megabytes per chunk would defeat the point.
 */

export const DEFAULT_DISPLAY_BUDGET_BYTES = 2 * 1024 * 1024

export const byteLength = (text: string): number => Buffer.byteLength(text, "utf8")

const isContinuation = (byte: number | undefined): boolean => byte !== undefined && (byte & 0xc0) === 0x80

/** Splits `text` so the first part has at most `maxBytes` UTF-8 bytes, never inside a character. */
export const splitAtBytes = (text: string, maxBytes: number): readonly [string, string] => {
  const bytes = Buffer.from(text, "utf8")
  if (bytes.length <= maxBytes) return [text, ""]
  let cut = Math.max(0, maxBytes)
  while (cut > 0 && isContinuation(bytes[cut])) cut--
  return [bytes.subarray(0, cut).toString("utf8"), bytes.subarray(cut).toString("utf8")]
}

/** Drops at least `minBytes` UTF-8 bytes from the front of `text`, never inside a character. */
const dropFront = (text: string, minBytes: number): { readonly kept: string; readonly dropped: number } => {
  const bytes = Buffer.from(text, "utf8")
  let cut = Math.min(bytes.length, minBytes)
  while (cut < bytes.length && isContinuation(bytes[cut])) cut++
  return { kept: bytes.subarray(cut).toString("utf8"), dropped: cut }
}

/** The line the card shows where bytes were skipped. */
export const skippedNote = (bytes: number): string => `\n[… ${bytes} bytes of output skipped …]\n`

export class LiveOutput {
  private headLeft: number
  private tailCapacity: number
  private readonly tail: Array<{ text: string; bytes: number }> = []
  private tailSize = 0
  private skippedBytes = 0
  private finished = false
  /** Whether any chunk at all was pushed (empty chunks do not count). */
  received = false

  /**
   * @param budgetBytes the most the card ever shows (the skip note aside)
   * @param tailBytes how much of the end is kept once the head is used up (default: an eighth of the budget)
   */
  constructor(budgetBytes: number = DEFAULT_DISPLAY_BUDGET_BYTES, tailBytes: number = Math.floor(budgetBytes / 8)) {
    this.tailCapacity = Math.min(Math.max(0, tailBytes), budgetBytes)
    this.headLeft = Math.max(0, budgetBytes - this.tailCapacity)
  }

  /** Takes a chunk; returns the part that may be shown now (the rest waits in the tail). */
  push(data: string): string {
    if (this.finished || data === "") return ""
    this.received = true
    if (this.tail.length === 0 && this.skippedBytes === 0) {
      const size = byteLength(data)
      if (size <= this.headLeft) {
        this.headLeft -= size
        return data
      }
      const [now, later] = splitAtBytes(data, this.headLeft)
      // Head bytes left unused by a character that did not fit go to the tail, so output that fits
      // the budget as a whole is always shown whole.
      this.tailCapacity += this.headLeft - byteLength(now)
      this.headLeft = 0
      this.keep(later)
      return now
    }
    this.keep(data)
    return ""
  }

  /** Ends the stream: the skip note (when bytes were skipped) and the kept tail. */
  finish(): string {
    if (this.finished) return ""
    this.finished = true
    const tail = this.tail.map((c) => c.text).join("")
    this.tail.length = 0
    this.tailSize = 0
    return this.skippedBytes > 0 ? skippedNote(this.skippedBytes) + tail : tail
  }

  /** Bytes that will never be shown. */
  get skipped(): number {
    return this.skippedBytes
  }

  private keep(text: string): void {
    if (text === "") return
    const bytes = byteLength(text)
    this.tail.push({ text, bytes })
    this.tailSize += bytes
    while (this.tailSize > this.tailCapacity && this.tail.length > 0) {
      const first = this.tail[0]!
      const excess = this.tailSize - this.tailCapacity
      if (first.bytes <= excess) {
        this.tail.shift()
        this.tailSize -= first.bytes
        this.skippedBytes += first.bytes
      } else {
        const { kept, dropped } = dropFront(first.text, excess)
        first.text = kept
        first.bytes -= dropped
        this.tailSize -= dropped
        this.skippedBytes += dropped
      }
    }
  }
}
