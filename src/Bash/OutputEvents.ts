/**
 * The output events of a foreground call as its consumer takes them: the consecutive chunks of one
 * pull merged into one event.
 */
import * as Chunk from "effect/Chunk"
import type { RunEvent } from "./Bash.js"

/** Consecutive output merged into one event up to this size (a few pipe reads: the joins stay small). */
const MERGE_MAX_CHARS = 256 * 1024

/**
 * Consecutive `Output` events taken from the queue in one pull, merged (up to {@link MERGE_MAX_CHARS}).
 * Each event costs its consumers a fixed amount (effects through the tool, the mapper and the
 * display budget): when the consumer falls behind a flood, the queue holds many pipe-sized chunks
 * and they are handled as one. Live output (one chunk at a time) is passed on as it is.
 */
export const mergeOutputs = (chunk: Chunk.Chunk<RunEvent>): Chunk.Chunk<RunEvent> => {
  if (chunk.length < 2) return chunk
  const out: Array<RunEvent> = []
  let texts: Array<string> = []
  let bytes: Array<Uint8Array> = []
  let chars = 0
  let allBytes = true
  const flush = () => {
    if (texts.length === 0) return
    if (texts.length === 1) out.push(allBytes ? { _tag: "Output", data: texts[0]!, bytes: bytes[0]! } : { _tag: "Output", data: texts[0]! })
    else out.push(allBytes ? mergedOutput(texts, bytes) : { _tag: "Output", data: texts.join("") })
    texts = []
    bytes = []
    chars = 0
    allBytes = true
  }
  for (const e of chunk) {
    if (e._tag !== "Output") {
      flush()
      out.push(e)
      continue
    }
    if (chars + e.data.length > MERGE_MAX_CHARS) flush()
    texts.push(e.data)
    chars += e.data.length
    if (e.bytes === undefined) allBytes = false
    else bytes.push(e.bytes)
  }
  flush()
  return out.length === chunk.length ? chunk : Chunk.unsafeFromArray(out)
}

/**
 * A merged event whose text and bytes are joined when first read: a consumer usually reads only
 * one of them (the v1 card the text, the v2 card the bytes), and each join copies up to 256 KiB.
 */
const mergedOutput = (texts: ReadonlyArray<string>, parts: ReadonlyArray<Uint8Array>): RunEvent => {
  let data: string | undefined
  let bytes: Uint8Array | undefined
  return {
    _tag: "Output",
    get data() {
      return data ??= texts.join("")
    },
    get bytes() {
      return bytes ??= Buffer.concat(parts)
    }
  }
}
