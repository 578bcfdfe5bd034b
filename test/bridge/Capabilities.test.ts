import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Capabilities, fromInitialize } from "../../src/Bridge/Capabilities.js"

const zedInitialize = {
  protocolVersion: 1,
  clientCapabilities: {
    fs: { readTextFile: true, writeTextFile: true },
    terminal: true,
    _meta: { terminal_output: true, "terminal-auth": true }
  },
  clientInfo: { name: "zed", version: "0.200.0" }
}

describe("Capabilities", () => {
  it("reads Zed's terminal_output flag", () => {
    expect(fromInitialize(zedInitialize)).toEqual({ _tag: "Card", outputKey: "terminal_output" })
  })

  it("reads the delta flag of other clients", () => {
    expect(fromInitialize({ clientCapabilities: { _meta: { terminal_output_delta: true } } }))
      .toEqual({ _tag: "Card", outputKey: "terminal_output_delta" })
  })

  it("prefers terminal_output when both are advertised", () => {
    expect(fromInitialize({ clientCapabilities: { _meta: { terminal_output_delta: true, terminal_output: true } } }))
      .toEqual({ _tag: "Card", outputKey: "terminal_output" })
  })

  it("falls back to text without a literal true flag", () => {
    for (const params of [
      undefined,
      null,
      {},
      { clientCapabilities: { terminal: true } },
      { clientCapabilities: { _meta: null } },
      { clientCapabilities: { _meta: { terminal_output: "true" } } },
      { clientCapabilities: { _meta: { terminal_output: 1 } } },
      { clientCapabilities: [] },
      { _meta: { terminal_output: true } }
    ]) {
      expect(fromInitialize(params)).toEqual({ _tag: "Text" })
    }
  })

  it.effect("remembers the first initialize of the connection; text until then", () =>
    Effect.gen(function*() {
      const caps = yield* Capabilities
      expect(yield* caps.get).toEqual({ _tag: "Text" })
      yield* caps.set(zedInitialize)
      expect(yield* caps.get).toEqual({ _tag: "Card", outputKey: "terminal_output" })
      yield* caps.set({ clientCapabilities: {} })
      expect(yield* caps.get).toEqual({ _tag: "Card", outputKey: "terminal_output" })
    }).pipe(Effect.provide(Capabilities.layer)))

  it.effect("keeps one state per layer build (per connection)", () =>
    Effect.gen(function*() {
      yield* Effect.flatMap(Capabilities, (c) => c.set(zedInitialize)).pipe(Effect.provide(Capabilities.layer))
      const other = yield* Effect.flatMap(Capabilities, (c) => c.get).pipe(Effect.provide(Capabilities.layer))
      expect(other).toEqual({ _tag: "Text" })
    }))
})
