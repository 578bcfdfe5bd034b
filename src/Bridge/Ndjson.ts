/**
 * NDJSON framing: bytes in, one frame per line out, with a hard cap on the bytes a line may hold.
 *
 * The cap is what keeps a client that never sends a newline (or sends one 2 GB message) from
 * growing the agent's heap without bound: once a line passes the cap its bytes are dropped as they
 * arrive, one `Overlong` frame is emitted at once, and framing resumes after the next newline.
 * Splitting happens on the 0x0A byte before UTF-8 decoding, which is safe because no multi-byte
 * UTF-8 sequence contains that byte; a line that is not valid UTF-8 becomes an `Undecodable` frame
 * rather than a silently altered string.
 */
import * as Stream from "effect/Stream"

/** 16 MiB: far above any real ACP message (a prompt with embedded resources), far below trouble. */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024

export type Frame =
  /** One complete line, without its `\n` (nor a trailing `\r`). Blank lines are not emitted. */
  | { readonly _tag: "Line"; readonly line: string }
  /** A line passed `maxLineBytes`; emitted as soon as the cap is crossed, its bytes are discarded up to the next newline. */
  | { readonly _tag: "Overlong"; readonly maxLineBytes: number }
  /** A line whose bytes are not valid UTF-8. */
  | { readonly _tag: "Undecodable" }

const NEWLINE = 0x0a
const CR = 0x0d

const isBlank = (bytes: Uint8Array): boolean => {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]
    if (b !== 0x20 && b !== 0x09 && b !== CR) return false
  }
  return true
}

/** A push-style splitter; one per input stream (it holds the partial line between chunks). */
export class LineSplitter {
  private parts: Array<Uint8Array> = []
  private size = 0
  private discarding = false
  private readonly decoder = new TextDecoder("utf-8", { fatal: true })
  private readonly encoder = new TextEncoder()

  constructor(readonly maxLineBytes: number = DEFAULT_MAX_LINE_BYTES) {
    if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes <= 0) {
      throw new RangeError(`maxLineBytes must be a positive integer, got ${maxLineBytes}`)
    }
  }

  /** Bytes held for the current partial line; never more than `maxLineBytes`. */
  get bufferedBytes(): number {
    return this.size
  }

  push(chunk: Uint8Array | string): Array<Frame> {
    const bytes = typeof chunk === "string" ? this.encoder.encode(chunk) : chunk
    const out: Array<Frame> = []
    let start = 0
    while (start <= bytes.length) {
      const nl = bytes.indexOf(NEWLINE, start)
      const end = nl === -1 ? bytes.length : nl
      const length = end - start
      if (this.discarding) {
        // Dropping the rest of an overlong line: keep nothing.
      } else if (this.size + length > this.maxLineBytes) {
        this.parts = []
        this.size = 0
        this.discarding = true
        out.push({ _tag: "Overlong", maxLineBytes: this.maxLineBytes })
      } else if (nl !== -1 && this.size === 0) {
        // The common case: a whole line inside one chunk, decoded without copying.
        this.emit(bytes.subarray(start, end), out)
        start = nl + 1
        continue
      } else if (length > 0) {
        // Copy: the caller may reuse its chunk buffer once push returns.
        this.parts.push(bytes.slice(start, end))
        this.size += length
      }
      if (nl === -1) break
      if (this.discarding) this.discarding = false
      else this.emit(this.take(), out)
      start = nl + 1
    }
    return out
  }

  /** Input ended: a last line without a trailing newline still counts. */
  end(): Array<Frame> {
    const out: Array<Frame> = []
    if (!this.discarding && this.size > 0) this.emit(this.take(), out)
    this.parts = []
    this.size = 0
    this.discarding = false
    return out
  }

  private take(): Uint8Array {
    const parts = this.parts
    const size = this.size
    this.parts = []
    this.size = 0
    if (parts.length === 1) return parts[0]!
    const joined = new Uint8Array(size)
    let offset = 0
    for (const part of parts) {
      joined.set(part, offset)
      offset += part.length
    }
    return joined
  }

  private emit(line: Uint8Array, out: Array<Frame>): void {
    if (line.length > 0 && line[line.length - 1] === CR) line = line.subarray(0, line.length - 1)
    if (isBlank(line)) return
    try {
      out.push({ _tag: "Line", line: this.decoder.decode(line) })
    } catch {
      out.push({ _tag: "Undecodable" })
    }
  }
}

/** Frames a byte (or text) stream into lines; see {@link LineSplitter}. */
export const frames =
  (maxLineBytes: number = DEFAULT_MAX_LINE_BYTES) =>
  <E, R>(input: Stream.Stream<Uint8Array | string, E, R>): Stream.Stream<Frame, E, R> =>
    Stream.suspend(() => {
      const splitter = new LineSplitter(maxLineBytes)
      return input.pipe(
        Stream.mapConcat((chunk) => splitter.push(chunk)),
        Stream.concat(Stream.suspend(() => Stream.fromIterable(splitter.end())))
      )
    })
