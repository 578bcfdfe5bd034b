/**
 * The output events of a call: each pipe read's bytes, decoded to text only when something reads
 * the text (past the card's head and the model's budget, nothing does), and the consecutive chunks
 * of one pull merged into one event.
 */
import * as Chunk from "effect/Chunk"
import type { RunEvent } from "./Bash.js"

/** Consecutive output merged into one event up to this size (a few pipe reads: the joins stay small). */
const MERGE_MAX_BYTES = 256 * 1024

/**
 * How many bytes at the end of `bytes` are the start of a UTF-8 character still missing its last
 * bytes (what a decoder holds back until the next read): 0 when the last character is complete.
 */
export const incompleteTail = (bytes: Uint8Array): number => {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const b = bytes[bytes.length - back]!
    if ((b & 0xc0) === 0x80) continue
    const length = b >= 0xf8 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1
    return length > back ? back : 0
  }
  return 0
}

/**
 * Cuts a stream of reads into chunks of whole UTF-8 characters: the start of a character split
 * across two reads is held back until the rest comes (invalid bytes pass). Decoding each chunk on
 * its own gives what a streaming decoder gives for the reads (a property test holds it), so no
 * decoder is needed to know where a chunk's text ends.
 */
export const wholeCharacters = () => {
  let held: Uint8Array | undefined
  return {
    /** The whole characters read so far and not yet returned, if any. */
    push(read: Uint8Array): Uint8Array | undefined {
      const bytes = held === undefined ? read : Buffer.concat([held, read])
      held = undefined
      const complete = bytes.length - incompleteTail(bytes)
      if (complete < bytes.length) held = bytes.subarray(complete)
      return complete === 0 ? undefined : complete < bytes.length ? bytes.subarray(0, complete) : bytes
    },
    /** At the end: the bytes of a character never completed, if any (they decode as a decoder's end does). */
    end(): Uint8Array | undefined {
      const rest = held
      held = undefined
      return rest
    }
  }
}

type Output = Extract<RunEvent, { readonly _tag: "Output" }>

export const decodeUtf8 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8")

/**
 * An output event of whole UTF-8 characters (`Execute` cuts the reads so), its text decoded when
 * first read. A flood's text was decoded per read and held in the queue until the bridge dropped
 * it: those strings (the heap's young generation is kept small, see bin.ts) survived scavenges and
 * made garbage collection about half of the agent's time.
 */
class BytesOutput {
  readonly _tag = "Output" as const
  private text: string | undefined
  constructor(private parts: ReadonlyArray<Uint8Array> | Uint8Array) {}
  get bytes(): Uint8Array {
    // Joined on first read (and once): the card reads them, a merged run is a few pipe reads.
    if (!(this.parts instanceof Uint8Array)) this.parts = Buffer.concat(this.parts)
    return this.parts
  }
  get data(): string {
    return this.text ??= decodeUtf8(this.bytes)
  }
}

/** The event of one read's bytes (whole characters); its `data` is decoded on first read. */
export const outputOf = (bytes: Uint8Array): Output => new BytesOutput(bytes)

/**
 * Consecutive `Output` events taken from the queue in one pull, merged (up to {@link MERGE_MAX_BYTES}).
 * Each event costs its consumers a fixed amount (effects through the tool, the mapper and the
 * display budget): when the consumer falls behind a flood, the queue holds many pipe-sized chunks
 * and they are handled as one. Live output (one chunk at a time) is passed on as it is.
 */
export const mergeOutputs = (chunk: Chunk.Chunk<RunEvent>): Chunk.Chunk<RunEvent> => {
  if (chunk.length < 2) return chunk
  const out: Array<RunEvent> = []
  let run: Array<Output> = []
  let size = 0
  const flush = () => {
    if (run.length === 1) out.push(run[0]!)
    else if (run.length > 1) out.push(merged(run))
    run = []
    size = 0
  }
  for (const e of chunk) {
    if (e._tag !== "Output") {
      flush()
      out.push(e)
      continue
    }
    // Bytes when the event has them (reading `data` would decode them), else its text.
    const n = e.bytes === undefined ? e.data.length : e.bytes.length
    if (size + n > MERGE_MAX_BYTES) flush()
    run.push(e)
    size += n
  }
  flush()
  return out.length === chunk.length ? chunk : Chunk.unsafeFromArray(out)
}

/** One event for consecutive ones: joined bytes when each has them (the text decoded from them), else joined text. */
const merged = (run: ReadonlyArray<Output>): Output =>
  run.every((e) => e.bytes !== undefined)
    ? new BytesOutput(run.map((e) => e.bytes!))
    : { _tag: "Output", data: run.map((e) => e.data).join("") }
