/**
 * The model's text of a command's output, computed while the output streams: ANSI escapes
 * stripped, `\r` progress rewrites resolved as a terminal would show them, then the first third
 * (head) and the last two thirds (tail) cut at line boundaries, within `maxChars` characters.
 * Every stage keeps at most a budget's worth of text (plus one overlong line). `OutputBudget`
 * pairs it with the full-output file.
 */
import { AnsiStripper } from "../Terminal/Ansi.js"

/** Control characters a model cannot use (tab, newline and carriage return are handled; ESC went with the sequences). */
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g

/**
 * ANSI escapes, then the other control characters. Looking for control characters costs a scan of
 * every character (a regex: ~1-3 ns each, the largest per-byte cost of a flood), so once the text
 * is being truncated (`controlLater`) they are left in and removed only from what is kept
 * ({@link HeadTail.render}): the dropped middle is never scanned for them. ANSI escapes are always
 * removed at once (found with `indexOf`, which is cheap), as they must be before `\r` is resolved.
 */
class ModelStripper {
  private readonly ansi = new AnsiStripper()
  controlLater = false
  push(chunk: string): string {
    const text = this.ansi.push(chunk)
    return this.controlLater ? text : stripControl(text)
  }
  flush(): string {
    return stripControl(this.ansi.flush())
  }
}

const HAS_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/
export const stripControl = (text: string): string => HAS_CONTROL.test(text) ? text.replace(CONTROL, "") : text

/**
 * Turns text (already stripped) into finished lines, resolving `\r` the way a terminal does: the
 * cursor returns to column 0 and later characters overwrite earlier ones (`"abc\rX"` shows `Xbc`,
 * and `"\r\n"` leaves the line as it was).
 *
 * A line longer than `maxLine` is emitted as a fragment (no newline) so one endless line cannot
 * grow without bound.
 */
export class LineAssembler {
  private line = ""
  private cursor = 0

  constructor(private readonly emit: (piece: string) => void, private readonly maxLine = 65536) {}

  push(text: string): void {
    let start = 0
    while (start <= text.length) {
      const nl = text.indexOf("\n", start)
      const end = nl < 0 ? text.length : nl
      if (end > start) this.write(text.slice(start, end))
      if (nl < 0) break
      this.emit(`${this.line}\n`)
      this.line = ""
      this.cursor = 0
      start = nl + 1
    }
  }

  /** Emits the unfinished line, if any. */
  flush(): void {
    if (this.line !== "") this.emit(this.line)
    this.line = ""
    this.cursor = 0
  }

  /** Where the next character goes is the end of the line (no `\r` rewrite pending). */
  get atLineEnd(): boolean {
    return this.cursor === this.line.length
  }

  /** Characters of the unfinished line. */
  get pendingChars(): number {
    return this.line.length
  }

  /** Forgets the unfinished line (its characters were accounted for by the caller). */
  dropLine(): void {
    this.line = ""
    this.cursor = 0
  }

  private write(segment: string): void {
    // An overlong line is cut into fragments anyway: emitted as it comes rather than appended,
    // since appending copies the whole line (hundreds of KB per chunk in a flood with no newline).
    if (this.cursor === this.line.length && this.line.length + segment.length > this.maxLine && segment.indexOf("\r") < 0) {
      if (this.line !== "") this.emit(this.line)
      this.emit(segment)
      this.line = ""
      this.cursor = 0
      return
    }
    const parts = segment.indexOf("\r") < 0 ? [segment] : segment.split("\r")
    for (let i = 0; i < parts.length; i++) {
      if (i > 0) this.cursor = 0
      const part = parts[i]!
      if (part === "") continue
      if (this.cursor === this.line.length) this.line += part
      else this.line = this.line.slice(0, this.cursor) + part + this.line.slice(this.cursor + part.length)
      this.cursor += part.length
    }
    if (this.line.length > this.maxLine) this.flush()
  }
}

/** Room kept for the marker line that says where text was omitted. */
const MARKER_RESERVE = 100

/**
 * Keeps the head (first third) and tail (rest) of a stream of pieces (lines, or fragments of an
 * overlong line), cutting at piece boundaries. Until the total exceeds the budget nothing is lost.
 */
export class HeadTail {
  private readonly headMax: number
  private readonly tailMax: number
  private head: Array<string> = []
  private headLen = 0
  private headClosed = false
  private tail: Array<string> = []
  private tailStart = 0
  private tailLen = 0
  private total = 0
  private truncated = false

  constructor(private readonly maxChars: number) {
    this.headMax = Math.floor(maxChars / 3)
    this.tailMax = Math.max(0, maxChars - this.headMax - MARKER_RESERVE)
  }

  push(piece: string): void {
    if (piece === "") return
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

export interface ModelTextResult {
  /** The model-facing text (not yet normalized with `StatusLines.toOutputText`). */
  readonly text: string
  /** Characters dropped by the budget; 0 when everything fits. */
  readonly omittedChars: number
}

/** Streaming text → ANSI stripped, `\r` resolved, head + tail within `maxChars`. */
export class ModelText {
  private readonly stripper = new ModelStripper()
  private headTail: HeadTail
  private readonly lines: LineAssembler

  constructor(private readonly maxChars: number) {
    this.headTail = new HeadTail(maxChars)
    this.lines = new LineAssembler((piece) => this.headTail.push(piece), Math.max(65536, maxChars))
  }

  push(text: string): void {
    const stripped = this.stripper.push(text)
    if (this.headTail.isTruncated) {
      this.stripper.controlLater = true
      this.lines.push(this.skipDropped(stripped))
    } else {
      this.lines.push(stripped)
    }
  }

  /**
   * While truncating, the part of `text` that cannot reach the tail is only counted: lines up to
   * a newline followed by at least a tail's worth of whole lines. Exact when `text` has no `\r`
   * (a rewrite would change the lengths) and no rewrite is pending; otherwise nothing is skipped.
   * So a flood costs a few `indexOf` per chunk, not a line split and a piece per line.
   */
  private skipDropped(text: string): string {
    const room = this.headTail.tailCapacity
    // `indexOf` first: `lastIndexOf` is a character-by-character loop in V8, `indexOf` is not.
    if (text.length <= room || text.indexOf("\n") < 0 || !this.lines.atLineEnd || text.indexOf("\r") >= 0) return text
    const lastNl = text.lastIndexOf("\n")
    if (lastNl < room) return text
    const cut = text.lastIndexOf("\n", lastNl - room)
    if (cut < 0) return text
    this.headTail.skip(this.lines.pendingChars + cut + 1)
    this.lines.dropLine()
    return text.slice(cut + 1)
  }

  /** The text so far, including an unfinished last line. */
  finish(): ModelTextResult {
    this.lines.push(this.stripper.flush())
    this.lines.flush()
    return { text: this.headTail.render(), omittedChars: this.headTail.omittedChars }
  }

  /** The text since the previous `take` (a read cursor), then starts a new window. */
  take(): ModelTextResult {
    const result = this.finish()
    this.headTail = new HeadTail(this.maxChars)
    return result
  }
}

/** The model text of a whole string at once. */
export const modelText = (raw: string, maxChars: number): ModelTextResult => {
  const m = new ModelText(maxChars)
  m.push(raw)
  return m.finish()
}
