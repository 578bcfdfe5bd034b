/**
 * The display budget of one v2 terminal, over raw bytes: the same rule as the v1 card's
 * `LiveOutput` (the head live; past it, a rolling tail of the most recent bytes, sent at the end
 * after one line saying how many bytes were skipped), but byte-faithful — a v2 terminal shows the
 * bytes the command wrote, so nothing is decoded or cut at character boundaries here.
 *
 * Mutable on purpose: it lives in one call's state and is only touched under the mapper's lock.
 */
import { DEFAULT_DISPLAY_BUDGET_BYTES, skippedNote } from "../LiveOutput.js"

const EMPTY = new Uint8Array(0)

export class ByteBudget {
  private headLeft: number
  private readonly tailCapacity: number
  private readonly tail: Array<Uint8Array> = []
  private tailSize = 0
  private skippedBytes = 0
  private finished = false
  /** Whether any non-empty chunk was pushed. */
  received = false

  constructor(budgetBytes: number = DEFAULT_DISPLAY_BUDGET_BYTES, tailBytes: number = Math.floor(budgetBytes / 8)) {
    this.tailCapacity = Math.min(Math.max(0, tailBytes), budgetBytes)
    this.headLeft = Math.max(0, budgetBytes - this.tailCapacity)
  }

  /** Takes a chunk; returns the part that may be shown now (the rest waits in the tail). */
  push(bytes: Uint8Array): Uint8Array {
    if (this.finished || bytes.length === 0) return EMPTY
    this.received = true
    if (this.tail.length === 0 && this.skippedBytes === 0) {
      if (bytes.length <= this.headLeft) {
        this.headLeft -= bytes.length
        return bytes
      }
      const now = bytes.subarray(0, this.headLeft)
      this.headLeft = 0
      this.keep(bytes.subarray(now.length))
      return now
    }
    this.keep(bytes)
    return EMPTY
  }

  /** Ends the stream: the skip note (when bytes were skipped) and the kept tail. */
  finish(): Uint8Array {
    if (this.finished) return EMPTY
    this.finished = true
    const parts = this.skippedBytes > 0 ? [Buffer.from(skippedNote(this.skippedBytes), "utf8"), ...this.tail] : this.tail
    const all = parts.length === 0 ? EMPTY : Buffer.concat(parts)
    this.tail.length = 0
    this.tailSize = 0
    return all
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
        this.tail[0] = first.subarray(excess)
        this.tailSize -= excess
        this.skippedBytes += excess
      }
    }
  }
}
