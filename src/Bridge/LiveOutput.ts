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

/** The line the card shows where bytes were skipped. */
export const skippedNote = (bytes: number): string => `\n[… ${bytes} bytes of output skipped …]\n`

/** Where `bytes` may be cut at or after `at` (never inside a character). */
const charStartFrom = (bytes: Uint8Array, at: number): number => {
  let cut = Math.min(bytes.length, Math.max(0, at))
  while (cut < bytes.length && isContinuation(bytes[cut])) cut++
  return cut
}

/** Where `bytes` may be cut at or before `at` (never inside a character). */
const charStartUpTo = (bytes: Uint8Array, at: number): number => {
  let cut = Math.min(bytes.length, Math.max(0, at))
  while (cut > 0 && isContinuation(bytes[cut])) cut--
  return cut
}

export class LiveOutput {
  private headLeft: number
  private tailCapacity: number
  /**
   * The rolling tail, as bytes: dropping its front is a view (`subarray`), where text would be
   * encoded and decoded again for every chunk of a flood. Decoded once, at the end.
   */
  private readonly tail: Array<Uint8Array> = []
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

  /**
   * Takes a chunk; returns the part that may be shown now (the rest waits in the tail). `bytes`,
   * when the caller has them, are `data` as UTF-8 (the executor reads them from the pipe): with
   * them a chunk past the head is never encoded.
   */
  push(data: string, bytes?: Uint8Array): string {
    if (this.finished || data === "") return ""
    this.received = true
    if (this.tail.length === 0 && this.skippedBytes === 0) {
      const size = bytes?.length ?? byteLength(data)
      if (size <= this.headLeft) {
        this.headLeft -= size
        return data
      }
      const all = bytes ?? Buffer.from(data, "utf8")
      const cut = charStartUpTo(all, this.headLeft)
      // Head bytes left unused by a character that did not fit go to the tail, so output that fits
      // the budget as a whole is always shown whole.
      this.tailCapacity += this.headLeft - cut
      this.headLeft = 0
      this.keep(all.subarray(cut))
      return Buffer.from(all.buffer, all.byteOffset, cut).toString("utf8")
    }
    this.keep(bytes ?? Buffer.from(data, "utf8"))
    return ""
  }

  /** Ends the stream: the skip note (when bytes were skipped) and the kept tail. */
  finish(): string {
    if (this.finished) return ""
    this.finished = true
    const tail = Buffer.concat(this.tail).toString("utf8")
    this.tail.length = 0
    this.tailSize = 0
    return this.skippedBytes > 0 ? skippedNote(this.skippedBytes) + tail : tail
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
        const dropped = charStartFrom(first, excess)
        this.tail[0] = first.subarray(dropped)
        this.tailSize -= dropped
        this.skippedBytes += dropped
      }
    }
  }
}
