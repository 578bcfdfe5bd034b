/**
 * One source for the bash tool's figures: the executor's config. The descriptions the model reads
 * are built from it (`BashTools.description`), the executor service exposes what is in effect
 * (`Bash.config`), and the README states the same defaults (checked here, since prose cannot import).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import * as BashTools from "../../src/Tools/Bash/BashTools.js"

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8").replace(/\s+/g, " ")

describe("the bash tool's figures", () => {
  it("the descriptions state the figures they are given", () => {
    const text = BashTools.description({ defaultTimeoutMs: 5000, maxTimeoutMs: 60_000, maxOutputChars: 1234, killGraceMs: 1500 })
    expect(text).toContain("timeout_ms defaults to 5000 (5 s) and is at most 60000 (60 s)")
    expect(text).toContain("[timeout clamped to 60s], [timed out after 5s]")
    expect(text).toContain("then SIGKILL 1.5 s later")
    expect(text).toContain("about 1234 characters")
    expect(BashTools.killDescription({ killGraceMs: 1500 })).toContain("SIGKILL 1.5 s later")
    expect(BashTools.BASH_DESCRIPTION).toBe(BashTools.description(BashTools.DEFAULT_FIGURES))
  })

  it.live("Bash.config is the layer's config over the defaults, with the fixed limits", () =>
    Effect.gen(function*() {
      const bash = yield* Bash
      expect(bash.config).toMatchObject({ ...BashLive.defaultConfig, ...BashLive.limits, defaultTimeoutMs: 5000, containment: "process-group" })
      const tools = yield* Effect.scoped(Effect.map(BashTools.toolset.open({ cwd: process.cwd() }), (t) => t.tools))
      expect(tools.find((t) => t.name === BashTools.BASH)!.description).toBe(BashTools.description(bash.config))
    }).pipe(Effect.provide(BashLive.layer({ defaultTimeoutMs: 5000, containment: "process-group" }))))

  it("the README states the default figures", () => {
    const { defaultTimeoutMs, maxOutputChars } = BashLive.defaultConfig
    const { killGraceMs, maxTimeoutMs } = BashLive.limits
    expect(README).toContain(`default foreground timeout, ${defaultTimeoutMs}, at most ${maxTimeoutMs})`)
    expect(README).toContain(`Timeout (default ${defaultTimeoutMs / 1000} s, at most ${maxTimeoutMs / 1000} s) and cancel run the same sequence: SIGTERM, ${killGraceMs / 1000} s, SIGKILL`)
    expect(README).toContain(`SIGTERM, then SIGKILL after ${killGraceMs / 1000} s`)
    expect(README).toContain(`at most ${maxOutputChars} chars`)
  })
})
