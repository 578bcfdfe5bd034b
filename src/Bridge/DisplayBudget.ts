/**
 * The display budget of one terminal, over bytes. A command may print gigabytes; the terminal (and
 * the client's memory) gets at most `budgetBytes` of it: the head live, then — once past the head —
 * a rolling tail of the most recent bytes, shown at the end after one line saying how many bytes
 * were skipped ({@link skippedNote}). Every byte that is shown is shown once, in order, so a
 * client appending what it gets reconstructs exactly head + note + tail.
 *
 * The v1 card shows text, so its cuts never fall inside a UTF-8 character (`wholeCharacters`;
 * `LiveOutput` is its text face); a v2 terminal shows the bytes as written, cut anywhere.
 *
 * Bytes, not text: dropping the tail's front is a view (`subarray`), so a flood is never encoded
 * or decoded past the head. Mutable on purpose: it lives inside one call's state in a mapper and is
 * only touched under that mapper's lock; copying megabytes per chunk would defeat the point.
 */

export const DEFAULT_DISPLAY_BUDGET_BYTES = 2 * 1024 * 1024

/** The line shown where bytes were skipped. */
export const skippedNote = (bytes: number): string => `\n[… ${bytes} bytes of output skipped …]\n`

const EMPTY = new Uint8Array(0)

const isContinuation = (byte: number | undefined): boolean => byte !== undefined && (byte & 0xc0) === 0x80

export class DisplayBudget {
  private headLeft: number
  private tailCapacity: number
  private readonly tail: Array<Uint8Array> = []
  private tailSize = 0
  private skippedBytes = 0
  private finished = false
  /** Whether any non-empty chunk was pushed. */
  received = false

  /**
   * @param budgetBytes the most ever shown (the skip note aside)
   * @param tailBytes how much of the end is kept once the head is used up (default: an eighth of the budget)
   * @param wholeCharacters never cut inside a UTF-8 character
   */
  constructor(
    budgetBytes: number = DEFAULT_DISPLAY_BUDGET_BYTES,
    tailBytes: number = Math.floor(budgetBytes / 8),
    private readonly wholeCharacters = false
  ) {
    this.tailCapacity = Math.min(Math.max(0, tailBytes), budgetBytes)
    this.headLeft = Math.max(0, budgetBytes - this.tailCapacity)
  }

  /** Takes a chunk; returns the part that may be shown now (a view of it; the rest waits in the tail). */
  push(bytes: Uint8Array): Uint8Array {
    if (this.finished || bytes.length === 0) return EMPTY
    this.received = true
    if (this.tail.length === 0 && this.skippedBytes === 0) {
      if (bytes.length <= this.headLeft) {
        this.headLeft -= bytes.length
        return bytes
      }
      const cut = this.cutUpTo(bytes, this.headLeft)
      // Head bytes left unused by a character that did not fit go to the tail, so output that fits
      // the budget as a whole is always shown whole.
      this.tailCapacity += this.headLeft - cut
      this.headLeft = 0
      this.keep(bytes.subarray(cut))
      return bytes.subarray(0, cut)
    }
    this.keep(bytes)
    return EMPTY
  }

  /** Ends the stream: how many bytes were skipped, and the kept tail. */
  finish(): { readonly skipped: number; readonly tail: Uint8Array } {
    if (this.finished) return { skipped: 0, tail: EMPTY }
    this.finished = true
    const tail = this.tail.length === 0 ? EMPTY : Buffer.concat(this.tail)
    this.tail.length = 0
    this.tailSize = 0
    return { skipped: this.skippedBytes, tail }
  }

  /** Ends the stream as bytes: the skip note (when bytes were skipped), then the kept tail. */
  finishBytes(): Uint8Array {
    const { skipped, tail } = this.finish()
    return skipped > 0 ? Buffer.concat([Buffer.from(skippedNote(skipped), "utf8"), tail]) : tail
  }

  /** Bytes that will never be shown. */
  get skipped(): number {
    return this.skippedBytes
  }

  private keep(bytes: Uint8Array): void {
    if (bytes.length === 0) return
    this.tail.push(bytes)
    this.tailSize += bytes.length
    while (this.tailSize > this.tailCapacity && this.tail.length > 0) {
      const first = this.tail[0]!
      const excess = this.tailSize - this.tailCapacity
      if (first.length <= excess) {
        this.tail.shift()
        this.tailSize -= first.length
        this.skippedBytes += first.length
      } else {
        const dropped = this.cutFrom(first, excess)
        this.tail[0] = first.subarray(dropped)
        this.tailSize -= dropped
        this.skippedBytes += dropped
      }
    }
  }

  /** Where `bytes` may be cut at or before `at`. */
  private cutUpTo(bytes: Uint8Array, at: number): number {
    let cut = Math.min(bytes.length, Math.max(0, at))
    if (this.wholeCharacters) while (cut > 0 && isContinuation(bytes[cut])) cut--
    return cut
  }

  /** Where `bytes` may be cut at or after `at`. */
  private cutFrom(bytes: Uint8Array, at: number): number {
    let cut = Math.min(bytes.length, Math.max(0, at))
    if (this.wholeCharacters) while (cut < bytes.length && isContinuation(bytes[cut])) cut++
    return cut
  }
}
