/**
 * What the connected client can show, read once from its `initialize` request and remembered for
 * the connection. Only the mapper reads it: everything else stays capability-blind, so there is a
 * single place that decides between the terminal card and the text fallback.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"

/**
 * `Card`: the client renders terminal cards fed through `_meta`; `outputKey` is the meta key it
 * reads live output from (Zed: `terminal_output`; some other clients: `terminal_output_delta`).
 * `Text`: no terminal support advertised; commands are shown as ```` ```console ```` text.
 */
export type TerminalMode =
  | { readonly _tag: "Card"; readonly outputKey: "terminal_output" | "terminal_output_delta" }
  | { readonly _tag: "Text" }

export const Text: TerminalMode = { _tag: "Text" }

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

/**
 * The mode a client asked for in its `initialize` params. Only a literal `true` counts: a client
 * that sends anything else has not promised to handle terminal ids, and sending them could break it.
 */
export const fromInitialize = (params: unknown): TerminalMode => {
  const meta = record(record(record(params)?.clientCapabilities)?._meta)
  if (meta?.terminal_output === true) return { _tag: "Card", outputKey: "terminal_output" }
  if (meta?.terminal_output_delta === true) return { _tag: "Card", outputKey: "terminal_output_delta" }
  return Text
}

/** The client advertised `clientCapabilities.session.notices` (an object): it can show `notice` updates. */
export const noticesFromInitialize = (params: unknown): boolean =>
  record(record(record(record(params)?.clientCapabilities)?.session)?.notices) !== undefined

export class Capabilities extends Context.Tag("dsh-acp/Bridge/Capabilities")<Capabilities, {
  /**
   * Records the client's capabilities from its `initialize` params. The first call wins: a client
   * cannot switch an already-open card to another form mid-connection.
   */
  readonly set: (initializeParams: unknown) => Effect.Effect<void>
  /** The mode to present terminal cards in (`Text` until `initialize` was seen). */
  readonly get: Effect.Effect<TerminalMode>
  /** The client can show `notice` session updates (false until `initialize` was seen). */
  readonly notices: Effect.Effect<boolean>
}>() {
  /** One state per build, i.e. per connection. */
  static readonly make: Effect.Effect<Context.Tag.Service<Capabilities>> = Effect.gen(function*() {
    const state = yield* Ref.make<{ readonly mode: TerminalMode; readonly notices: boolean } | undefined>(undefined)
    return {
      set: (params) =>
        Ref.update(state, (current) => current ?? { mode: fromInitialize(params), notices: noticesFromInitialize(params) }),
      get: Effect.map(Ref.get(state), (s) => s?.mode ?? Text),
      notices: Effect.map(Ref.get(state), (s) => s?.notices ?? false)
    }
  })

  static readonly layer: Layer.Layer<Capabilities> = Layer.effect(Capabilities, Capabilities.make)

  /** A fixed mode, for tests and embedders that know their client. */
  static readonly layerFixed = (mode: TerminalMode): Layer.Layer<Capabilities> =>
    Layer.succeed(Capabilities, { set: () => Effect.void, get: Effect.succeed(mode), notices: Effect.succeed(false) })
}
