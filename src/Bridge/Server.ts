/**
 * The agent served over a pair of streams: any input byte stream and any line writer (stdio for
 * the command, a socket or an in-memory pipe for an embedder), with any harness.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import type * as Stream from "effect/Stream"
import type { Harness } from "../Harness/Harness.js"
import * as Agent from "./Agent.js"
import { Capabilities } from "./Capabilities.js"
import { JsonRpc } from "./JsonRpc.js"
import { Mapping, type MappingConfig } from "./Mapping.js"
import * as Stdio from "./Stdio.js"

export interface ServeOptions<E, R> {
  readonly input: Stream.Stream<Uint8Array | string, E, R>
  /** Writes one protocol line (the newline is added by the writer); `flush`: see `JsonRpc.PeerOptions`. */
  readonly write: (line: string, flush?: boolean) => Effect.Effect<void>
  readonly agentInfo: Agent.AgentInfo
  readonly mapping?: Partial<MappingConfig>
  readonly maxLineBytes?: number
}

/** Serves ACP until `input` ends; the harness comes from the context (e.g. `ShellHarness.layer`). */
export const serve = <E, R>(options: ServeOptions<E, R>): Effect.Effect<void, E, R | Harness> =>
  Agent.serve(options.input, options.agentInfo, { mapping: options.mapping ?? {} }).pipe(
    Effect.provide(
      Layer.mergeAll(
        JsonRpc.layer({ write: options.write, ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }) }),
        Mapping.layerWith(options.mapping ?? {}).pipe(Layer.provideMerge(Capabilities.layer))
      )
    )
  )

/** Effect's default logger writes to stdout, the protocol channel: logs go to stderr instead. */
export const stderrLogger: Layer.Layer<never> = Logger.replace(
  Logger.defaultLogger,
  Logger.withConsoleError(Logger.logfmtLogger)
)

/** Serves ACP on this process's stdin and stdout; logs go to stderr, as logfmt lines. */
export const serveStdio = (options: Omit<ServeOptions<never, never>, "input" | "write">) =>
  serve({ ...options, input: Stdio.stdin, write: Stdio.stdoutLineWriter() }).pipe(Effect.provide(stderrLogger))
