/**
 * The library never changes process-wide V8 flags: an embedder's process is its own. The young
 * generation setting that keeps a flood's peak RSS down is made by the command (`src/bin.ts`).
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const SRC = fileURLToPath(new URL("../../src/", import.meta.url))

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith(".ts") ? [path] : []
  })

describe("V8 flags", () => {
  it("only the command sets them", () => {
    const setters = filesUnder(SRC)
      .filter((file) => /node:v8|setFlagsFromString/.test(readFileSync(file, "utf8")))
      .map((file) => relative(SRC, file))
    expect(setters).toEqual(["bin.ts"])
  })
})
