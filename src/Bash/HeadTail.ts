/**
 * The head and tail of the model text (see `ModelText`), kept while the text streams.
 */
import type { Piece } from "./ModelLines.js"

/** Control characters a model cannot use (tab, newline and carriage return are handled; ESC went with the sequences). */
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g
const HAS_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/
export const stripControl = (text: string): string => HAS_CONTROL.test(text) ? text.replace(CONTROL, "") : text

/** Room kept for the marker line that says where text was omitted. */
const MARKER_RESERVE = 100

/**
 * Keeps the head (first third) and tail (rest) of a stream of pieces (lines, or fragments of an
 * overlong line), cutting at piece boundaries. Until the total exceeds the budget nothing is lost.
 */
export class HeadTail {
  private readonly headMax: number
  private readonly tailMax: number
  private head: Array<Piece> = []
  private headLen = 0
  private headClosed = false
  private tail: Array<Piece> = []
  private tailStart = 0
  private tailLen = 0
  private total = 0
  private truncated = false

  constructor(private readonly maxChars: number) {
    this.headMax = Math.floor(maxChars / 3)
    this.tailMax = Math.max(0, maxChars - this.headMax - MARKER_RESERVE)
  }

  push(piece: Piece): void {
    if (piece.length === 0) return
    this.total += piece.length
    if (!this.headClosed) {
      if (this.headLen + piece.length <= this.headMax) {
        this.head.push(piece)
        this.headLen += piece.length
        return
      }
      this.headClosed = true
      if (this.headLen === 0) {
        // One line longer than the whole head: a mid-line cut is better than an empty head.
        this.head.push(piece.slice(0, this.headMax))
        this.headLen = this.headMax
        piece = piece.slice(this.headMax)
      }
    }
    this.tail.push(piece)
    this.tailLen += piece.length
    if (this.truncated || this.headLen + this.tailLen > this.maxChars) {
      this.truncated = true
      this.trimTail()
    }
  }

  private trimTail(): void {
    while (this.tailLen > this.tailMax && this.tail.length - this.tailStart > 1) {
      this.tailLen -= this.tail[this.tailStart]!.length
      this.tail[this.tailStart] = ""
      this.tailStart++
    }
    if (this.tailLen > this.tailMax) {
      const only = this.tail[this.tailStart]!
      this.tail[this.tailStart] = only.slice(only.length - this.tailMax)
      this.tailLen = this.tailMax
    }
    if (this.tailStart > 1024 && this.tailStart * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailStart)
      this.tailStart = 0
    }
  }

  /** The middle is being dropped: only the tail changes from now on. */
  get isTruncated(): boolean {
    return this.truncated
  }

  /**
   * Accounts for `chars` characters of pieces that are known to be dropped (pieces of at least
   * `tailMax` characters follow): the same state as pushing them, without looking at them.
   */
  skip(chars: number): void {
    this.total += chars
    this.tail = []
    this.tailStart = 0
    this.tailLen = 0
  }

  /** Characters the tail keeps at most. */
  get tailCapacity(): number {
    return this.tailMax
  }

  /** Characters dropped between head and tail. */
  get omittedChars(): number {
    return this.total - this.headLen - this.tailLen
  }

  /** The kept text; when something was dropped, a marker line stands where it was. */
  render(): string {
    const head = this.head.join("")
    // Pieces pushed once truncating still hold control characters (see ModelStripper).
    const tail = stripControl(this.tail.slice(this.tailStart).join(""))
    const omitted = this.omittedChars
    if (omitted === 0) return head + tail
    const sep = head === "" || head.endsWith("\n") ? "" : "\n"
    return `${head}${sep}[… ${omitted} chars omitted …]\n${tail}`
  }
}
