/**
 * The lines of the model text (see `ModelText`): `\r` rewrites resolved as a terminal shows them,
 * overlong lines cut into fragments, and the pieces they make, which may be text or ASCII bytes
 * not decoded yet (a flood's pieces are mostly dropped unread by `HeadTail`).
 */
import { decodeUtf8 } from "./OutputEvents.js"

/** A piece of the model text: a string, or a {@link BytesPiece} (the same interface). */
export interface Piece {
  readonly length: number
  slice(start: number, end?: number): Piece
  toString(): string
}

const NEWLINE = Buffer.from("\n")

/**
 * Text, then ASCII bytes (one character each), read as text only by `toString`: slicing keeps
 * views of the bytes, so dropping a piece or keeping its end never decodes what is dropped.
 */
export class BytesPiece implements Piece {
  constructor(private readonly text: string, private readonly parts: ReadonlyArray<Uint8Array>, readonly length: number) {}

  slice(start: number, end: number = this.length): Piece {
    const from = Math.max(0, Math.min(start, this.length))
    const to = Math.max(from, Math.min(end, this.length))
    if (to <= this.text.length) return this.text.slice(from, to)
    const text = from < this.text.length ? this.text.slice(from) : ""
    const parts: Array<Uint8Array> = []
    let at = this.text.length
    for (const part of this.parts) {
      const lo = Math.max(from, at)
      const hi = Math.min(to, at + part.length)
      if (lo < hi) parts.push(lo === at && hi === at + part.length ? part : part.subarray(lo - at, hi - at))
      at += part.length
    }
    return new BytesPiece(text, parts, to - from)
  }

  toString(): string {
    return this.text + decodeUtf8(this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts))
  }
}

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
  /** ASCII bytes after `line`, not decoded yet (see {@link appendAscii}). */
  private lineBytes: Array<Uint8Array> = []
  private lineBytesLength = 0
  private cursor = 0

  constructor(private readonly emit: (piece: Piece) => void, private readonly maxLine = 65536) {}

  push(text: string): void {
    let start = 0
    while (start <= text.length) {
      const nl = text.indexOf("\n", start)
      const end = nl < 0 ? text.length : nl
      if (end > start) this.write(text.slice(start, end))
      if (nl < 0) break
      this.endLine()
      start = nl + 1
    }
  }

  /**
   * The same as `push` of the bytes' text, for ASCII bytes without a newline or `\r` while the
   * cursor is at the line's end: they are appended (or emitted) as bytes, decoded only if the
   * piece they end up in is read.
   */
  appendAscii(bytes: Uint8Array): void {
    if (bytes.length === 0) return
    const length = this.pendingChars
    if (length + bytes.length > this.maxLine) {
      // As `write` does with an overlong segment.
      if (length > 0) this.emit(this.linePiece())
      this.emit(new BytesPiece("", [bytes], bytes.length))
      this.dropLine()
      return
    }
    this.lineBytes.push(bytes)
    this.lineBytesLength += bytes.length
    this.cursor += bytes.length
  }

  /** Ends the line at a newline. */
  endLine(): void {
    if (this.lineBytesLength === 0) this.emit(`${this.line}\n`)
    else this.emit(new BytesPiece(this.line, [...this.lineBytes, NEWLINE], this.pendingChars + 1))
    this.dropLine()
  }

  /** Emits the unfinished line, if any. */
  flush(): void {
    if (this.pendingChars > 0) this.emit(this.linePiece())
    this.dropLine()
  }

  /** Where the next character goes is the end of the line (no `\r` rewrite pending). */
  get atLineEnd(): boolean {
    return this.cursor === this.pendingChars
  }

  /** Characters of the unfinished line. */
  get pendingChars(): number {
    return this.line.length + this.lineBytesLength
  }

  /** Forgets the unfinished line (its characters were accounted for by the caller). */
  dropLine(): void {
    this.line = ""
    this.lineBytes = []
    this.lineBytesLength = 0
    this.cursor = 0
  }

  private linePiece(): Piece {
    return this.lineBytesLength === 0 ? this.line : new BytesPiece(this.line, this.lineBytes, this.pendingChars)
  }

  private write(segment: string): void {
    if (this.lineBytesLength > 0) {
      this.line += decodeUtf8(Buffer.concat(this.lineBytes))
      this.lineBytes = []
      this.lineBytesLength = 0
    }
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
