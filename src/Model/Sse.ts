/**
 * Server-sent events (the framing both Chat Completions and Anthropic Messages stream in), parsed
 * per the WHATWG rules that matter in practice: `\n`, `\r\n` or `\r` line ends, `:` comments
 * (keep-alives), several `data:` lines joined with `\n`, and a last event without its blank line.
 */
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

export interface SseEvent {
  /** The `event:` field; `undefined` when the event had none (Chat Completions never sends one). */
  readonly event: string | undefined
  readonly data: string
}

/** A line-at-a-time parser, so the framing can be tested without streams. */
export class SseParser {
  private event: string | undefined = undefined
  private data: Array<string> = []

  /** Feeds one line (without its line end); returns the event it completes, if any. */
  line(line: string): SseEvent | undefined {
    if (line === "") return this.dispatch()
    if (line.startsWith(":")) return undefined
    const colon = line.indexOf(":")
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") this.data.push(value)
    else if (field === "event") this.event = value
    // `id:` and `retry:` matter only for reconnecting EventSource clients; a model stream is one shot.
    return undefined
  }

  /** At the end of the body: a server may omit the blank line after its last event. */
  end(): SseEvent | undefined {
    return this.dispatch()
  }

  private dispatch(): SseEvent | undefined {
    const event = this.data.length === 0 ? undefined : { event: this.event, data: this.data.join("\n") }
    this.event = undefined
    this.data = []
    return event
  }
}

/** The events of a response body. */
export const events = <E, R>(body: Stream.Stream<Uint8Array, E, R>): Stream.Stream<SseEvent, E, R> =>
  Stream.suspend(() => {
    const parser = new SseParser()
    return body.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.filterMap((line) => {
        return Option.fromNullable(parser.line(line))
      }),
      Stream.concat(Stream.suspend(() => {
        const last = parser.end()
        return last === undefined ? Stream.empty : Stream.make(last)
      }))
    )
  })

