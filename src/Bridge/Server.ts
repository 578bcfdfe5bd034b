/**
 * The agent served over a pair of streams: any input byte stream and any line writer (stdio for
 * the command, a socket or an in-memory pipe for an embedder), with any harness.
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import type * as Stream from "effect/Stream"
import type { Harness } from "../Harness/Harness.js"
import * as Agent from "./Agent.js"
import { Capabilities } from "./Capabilities.js"
import { JsonRpc, make as makePeer } from "./JsonRpc.js"
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

/**
 * Serves ACP until `input` ends; the harness comes from the context (e.g. `ShellHarness.layer`).
 *
 * The connection's services are made by their effects and provided as services, not built as
 * layers: a layer build goes through a memo map and a scope and diffs every FiberRef, and the
 * three of them cost the command ~2 ms of its start before `initialize` could be answered.
 */
export const serve = <E, R>(options: ServeOptions<E, R>): Effect.Effect<void, E, R | Harness> =>
  Agent.serve(options.input, options.agentInfo, { mapping: options.mapping ?? {} }).pipe(
    Effect.provideServiceEffect(Mapping, Mapping.makeWith(options.mapping ?? {})),
    Effect.provideServiceEffect(Capabilities, Capabilities.make),
    Effect.provideServiceEffect(JsonRpc, makePeer({ write: options.write, ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }) }))
  )

/** Logfmt lines on stderr: Effect's default logger writes to stdout, the protocol channel. */
export const logger: Logger.Logger<unknown, void> = Logger.withConsoleError(Logger.logfmtLogger)

/** Runs `effect` (and the fibers it forks) with {@link logger} in place of Effect's default logger. */
export const withStderrLogger = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locallyWith(effect, FiberRef.currentLoggers, (loggers) => HashSet.add(HashSet.remove(loggers, Logger.defaultLogger), logger))

/** {@link withStderrLogger} as a layer. */
export const stderrLogger: Layer.Layer<never> = Logger.replace(Logger.defaultLogger, logger)

/** Serves ACP on this process's stdin and stdout; logs go to stderr, as logfmt lines. */
export const serveStdio = (options: Omit<ServeOptions<never, never>, "input" | "write">) =>
  withStderrLogger(serve({ ...options, input: Stdio.stdin, write: Stdio.stdoutLineWriter() }))
