import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { VERSION } from "../../src/Cli.js"

describe("the command's version", () => {
  it("is package.json's, in the source and in the bundle (`--version`, and agentInfo)", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { version: string }
    expect(VERSION).toBe(pkg.version)
    expect(execFileSync(process.execPath, ["dist/bin.js", "--version"], { encoding: "utf8" }).trim()).toBe(pkg.version)
  })
})
