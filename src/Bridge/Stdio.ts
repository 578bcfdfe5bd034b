/**
 * The process's stdio as the peer's transport: stdin as a byte Stream, stdout as a line writer.
 *
 * stdout is the protocol channel and nothing else may write to it. The writer waits for 'drain'
 * when the pipe is full (an editor that reads slowly must slow us down, not grow our heap), and a
 * broken pipe (the editor went away) is logged and later lines dropped instead of crashing the
 * process with an unhandled 'error' event: stdin ends too, and the agent shuts down from there.
 */
import type { Writable } from "node:stream"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

export class StdinError extends Data.TaggedError("StdinError")<{ readonly cause: unknown }> {}

/**
 * Any readable (a socket, a child's stdout, stdin) as a Stream of its chunks; ends at EOF.
 *
 * Not `Stream.fromAsyncIterable`: a Readable's async iterator is an async generator, whose
 * `return()` (the stream's finalizer) queues behind the pending `next()`, so interrupting a read of
 * an idle stdin (SIGTERM) hung until the next byte arrived. This reader is interruptible at once.
 */
export const fromReadable = (readable: NodeJS.ReadableStream): Stream.Stream<Uint8Array, StdinError> =>
  NodeStream.fromReadable<StdinError, Uint8Array | string>(() => readable, (cause) => new StdinError({ cause })).pipe(
    Stream.map((chunk) => (typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk))
  )

/** The process's stdin. Evaluated lazily so importing this module does not touch `process.stdin`. */
export const stdin: Stream.Stream<Uint8Array, StdinError> = Stream.suspend(() => fromReadable(process.stdin))

/**
 * A writer of protocol lines (each gets its `\n`). Resolves once the line is accepted by the stream,
 * or after 'drain' when the stream's buffer is full. Never fails: a write error is logged once and
 * the writer goes quiet. Callers must not call it concurrently (the JSON-RPC peer serializes).
 * `flush`: the line (and the run's lines before it) leave now, not at the end of the run.
 */
export const lineWriter = (writable: Writable): (line: string, flush?: boolean) => Effect.Effect<void> => {
  let broken: unknown = undefined
  // The lines written in one synchronous run (a fiber emitting a call's last updates and its
  // answer, say) leave in one system call: corked at the first, uncorked on the next tick, so a
  // line never waits behind other work of the turn (an uncork on `setImmediate` did, measurably).
  let corked = false
  const uncork = () => {
    corked = false
    writable.uncork()
  }
  writable.on("error", (error) => {
    broken ??= error ?? new Error("write failed")
  })
  let reported = false
  const reportBroken = Effect.suspend(() => {
    if (reported) return Effect.void
    reported = true
    return Effect.logError("protocol output is broken; dropping further lines", broken)
  })
  return (line, flush = false) =>
    Effect.suspend(() => {
      if (broken !== undefined) return reportBroken
      return Effect.async<void>((resume) => {
        const onDrain = () => {
          cleanup()
          resume(Effect.void)
        }
        const onError = () => {
          cleanup()
          resume(reportBroken)
        }
        const cleanup = () => {
          writable.off("drain", onDrain)
          writable.off("error", onError)
        }
        let ok: boolean
        try {
          if (!corked) {
            corked = true
            writable.cork()
            process.nextTick(uncork)
          }
          ok = writable.write(line + "\n")
          // A line the peer waits for (a card's end) does not wait behind the rest of the run: that
          // was the turn's end, its log records and the answer (1-2 ms a call). The tick's uncork
          // then finds nothing corked, or what was written after this line.
          if (flush && corked) {
            corked = false
            writable.uncork()
          }
        } catch (error) {
          broken ??= error
          resume(reportBroken)
          return
        }
        if (ok) {
          resume(Effect.void)
          return
        }
        writable.on("drain", onDrain)
        writable.on("error", onError)
        return Effect.sync(cleanup)
      })
    })
}

/**
 * The process's stdout as a protocol line writer. A process that exits at once (after a signal)
 * still sends the lines of its last turn: stdout to a pipe or file is written synchronously, so
 * uncorking on 'exit' flushes them (a no-op when nothing is corked).
 */
export const stdoutLineWriter = (): (line: string, flush?: boolean) => Effect.Effect<void> => {
  process.once("exit", () => process.stdout.uncork())
  return lineWriter(process.stdout)
}
