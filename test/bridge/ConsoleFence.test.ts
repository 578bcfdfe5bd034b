import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { stripAnsi } from "../../src/Terminal/Ansi.js"
import { consoleFence, longestBacktickRun } from "../../src/Bridge/ConsoleFence.js"

describe("ConsoleFence", () => {
  it("strips colours, cursor moves, OSC hyperlinks and charset switches", () => {
    expect(stripAnsi("\u001b[1;31mred\u001b[0m \u001b[2K\u001b[1Gx \u001b]8;;http://a\u0007link\u001b]8;;\u0007 \u001b(Bok\u001b7"))
      .toBe("red x link ok")
  })

  it("uses a fence longer than any backtick run, at least three", () => {
    expect(consoleFence("a\n")).toBe("```console\na\n```")
    expect(consoleFence("```js\nx\n````\n")).toBe("`````console\n```js\nx\n````\n`````")
    expect(consoleFence("no newline")).toBe("```console\nno newline\n```")
    expect(consoleFence("")).toBe("```console\n```")
  })

  it.prop("the fence is never closed early and never contains ESC", [FastCheck.string({ unit: "binary" })], ([s]) => {
    const out = consoleFence(s)
    const fence = /^`+/.exec(out)![0]
    expect(fence.length).toBeGreaterThan(longestBacktickRun(stripAnsi(s)))
    expect(out.endsWith(`\n${fence}`)).toBe(true)
    expect(out.slice(fence.length, -fence.length)).not.toContain(fence)
    expect(out).not.toContain("\u001b")
  })
})
