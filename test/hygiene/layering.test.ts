/**
 * Imports point one way: bin → Bridge → Harness → Tools → Bash / Presentation → Terminal (Model is
 * used by the harness and the command); Platform (what the OS offers, e.g. random bytes) is below
 * them all. Read from the source, so a stray import fails here rather than in a reviewer's head.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const SRC = fileURLToPath(new URL("../../src/", import.meta.url))

/** The areas each area may import from (besides itself). */
const allowed: Record<string, ReadonlyArray<string>> = {
  Platform: [],
  Terminal: ["Platform"],
  Presentation: ["Terminal", "Platform"],
  Bash: ["Terminal", "Platform"],
  Tools: ["Bash", "Presentation", "Terminal", "Platform"],
  Model: ["Platform"],
  Harness: ["Tools", "Bash", "Presentation", "Terminal", "Model", "Platform"],
  Bridge: ["Harness", "Presentation", "Terminal", "Platform"]
}

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith(".ts") ? [path] : []
  })

const areaOf = (file: string) => relative(SRC, file).split("/")[0]!

describe("source layering", () => {
  it("every area imports only from the areas below it", () => {
    const violations: Array<string> = []
    let checked = 0
    for (const file of filesUnder(SRC)) {
      const area = areaOf(file)
      const permitted = allowed[area]
      if (permitted === undefined) continue // bin, Cli, Demo, index: the top may import anything
      for (const match of readFileSync(file, "utf8").matchAll(/(?:from |import\()"(\.[^"]+)"/g)) {
        const target = areaOf(resolve(dirname(file), match[1]!))
        checked++
        if (target !== area && !permitted.includes(target)) violations.push(`${relative(SRC, file)} imports ${match[1]}`)
      }
    }
    expect(checked).toBeGreaterThan(100)
    expect(violations).toEqual([])
  })

  it("the Bash area exports its contract, not its parts", () => {
    const exported = [...readFileSync(join(SRC, "Bash/index.ts"), "utf8").matchAll(/^export .* from "\.\/(\w+)\.js"/gm)].map((m) => m[1])
    // Sandbox: the profiles (`SandboxProfile`, `Support`) that BashConfig and BashSession speak of.
    expect(exported).toEqual(["Bash", "BashLive", "EnvScrub", "StatusLines", "Sandbox"])
  })
})
