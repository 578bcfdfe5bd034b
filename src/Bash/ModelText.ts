/**
 * The model's text of a command's output, computed while the output streams: ANSI escapes
 * stripped, `\r` progress rewrites resolved as a terminal would show them, then the first third
 * (head) and the last two thirds (tail) cut at line boundaries, within `maxChars` characters.
 * Every stage keeps at most a budget's worth of text (plus one overlong line). `OutputBudget`
 * pairs it with the full-output file.
 */
import { isAscii } from "node:buffer"
import { AnsiStripper } from "../Terminal/Ansi.js"
import { HeadTail, stripControl } from "./HeadTail.js"
import { LineAssembler } from "./ModelLines.js"
import { decodeUtf8 } from "./OutputEvents.js"

export { stripControl } from "./HeadTail.js"


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
  /** No part of an escape sequence is held back: text without ESC comes out as it went in (bar control characters). */
  get idle(): boolean {
    return this.ansi.idle
  }
}


export interface ModelTextResult {
  /** The model-facing text (not yet normalized with `StatusLines.toOutputText`). */
  readonly text: string
  /** Characters dropped by the budget; 0 when everything fits. */
  readonly omittedChars: number
}

const ESC = 0x1b
const CR = 0x0d
const LF = 0x0a

/** Streaming text → ANSI stripped, `\r` resolved, head + tail within `maxChars`. */
export class ModelText {
  private readonly stripper = new ModelStripper()
  private headTail: HeadTail
  private readonly lines: LineAssembler

  /** @param maxLine where an endless line is cut into fragments (smaller only in tests) */
  constructor(private readonly maxChars: number, maxLine: number = Math.max(65536, maxChars)) {
    this.headTail = new HeadTail(maxChars)
    this.lines = new LineAssembler((piece) => this.headTail.push(piece), maxLine)
  }

  /**
   * The same as `push` of the bytes' text, for whole UTF-8 characters (see the executor's output
   * events). While truncating, plain ASCII (no escape, no `\r`) is not decoded: the lines it makes
   * are kept as bytes and decoded only if they reach the kept tail, and whole lines that cannot
   * reach it are only counted (as `skipDropped` does). A flood's middle is never decoded.
   */
  pushBytes(bytes: Uint8Array): void {
    if (!this.headTail.isTruncated || !this.stripper.controlLater || !this.stripper.idle || !this.lines.atLineEnd || bytes.indexOf(ESC) >= 0 || bytes.indexOf(CR) >= 0 || !isAscii(bytes)) {
      return this.push(decodeUtf8(bytes))
    }
    let start = 0
    const room = this.headTail.tailCapacity
    const lastNl = bytes.lastIndexOf(LF)
    if (lastNl < 0) return this.lines.appendAscii(bytes)
    if (bytes.length > room && lastNl >= room) {
      const cut = bytes.lastIndexOf(LF, lastNl - room)
      if (cut >= 0) {
        this.headTail.skip(this.lines.pendingChars + cut + 1)
        this.lines.dropLine()
        start = cut + 1
      }
    }
    // What can still reach the tail: its lines as text, the unfinished last line as bytes.
    if (start === 0 && this.lines.pendingChars > 0) {
      const nl = bytes.indexOf(LF)
      this.lines.appendAscii(bytes.subarray(0, nl))
      this.lines.endLine()
      start = nl + 1
    }
    if (start <= lastNl) this.lines.push(decodeUtf8(bytes.subarray(start, lastNl + 1)))
    this.lines.appendAscii(bytes.subarray(lastNl + 1))
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
