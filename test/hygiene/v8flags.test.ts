/**
 * The library never changes process-wide V8 flags: an embedder's process is its own. The young
 * generation setting that keeps a flood's peak RSS down is made by the command (`src/bin.ts`), and
 * not while the build writes V8's code cache, which records the flags: a start (default flags when
 * the loader compiles the bundle) must accept the cache.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const SRC = fileURLToPath(new URL("../../src/", import.meta.url))
const DIST = fileURLToPath(new URL("../../dist/", import.meta.url))

/** Compiles the bundle with its code cache as `dist/bin.js` does, and says whether V8 rejected the cache. */
const CHECK = `
const fs = require("node:fs"), path = require("node:path"), vm = require("node:vm");
const dir = process.argv[1], file = path.join(dir, "dsh-acp.cjs");
const cache = fs.readdirSync(dir).find((f) => /^dsh-acp-[0-9a-f]+\\.cache$/.test(f));
if (cache === undefined) { process.stdout.write("no cache"); process.exit(0); }
const script = new vm.Script("(function (exports, require, module, __filename, __dirname) {" + fs.readFileSync(file, "utf8") + "\\n})", { filename: file, cachedData: fs.readFileSync(path.join(dir, cache)) });
process.stdout.write(script.cachedDataRejected ? "rejected" : "accepted");
`

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

  it("the built code cache was written with the default flags, so a start accepts it", () => {
    expect(execFileSync(process.execPath, ["-e", CHECK, DIST], { encoding: "utf8" })).toBe("accepted")
  })

  /**
   * The loader keeps TurboFan off while the bundle loads and turns it on at the first protocol line,
   * or a second later without one: left off, every command's output would run unoptimized. Run
   * with a stand-in bundle that asks V8 (natives syntax) at each point.
   */
  it("the loader turns TurboFan back on at the first stdout line, or after a second", () => {
    const dir = mkdtempSync(join(tmpdir(), "dsh-acp-loader-"))
    try {
      copyFileSync(join(DIST, "bin.js"), join(dir, "bin.js"))
      writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "commonjs" }))
      const probe = (mode: "line" | "silent") => {
        writeFileSync(join(dir, "dsh-acp.cjs"), `
          const seen = { atLoad: %IsTurbofanEnabled() };
          if (${JSON.stringify(mode)} === "line") {
            process.stdout.write("{}\\n");
            seen.afterLine = %IsTurbofanEnabled();
            process.stderr.write(JSON.stringify(seen));
          } else {
            setTimeout(() => { seen.later = %IsTurbofanEnabled(); process.stderr.write(JSON.stringify(seen)); }, 1500);
          }`)
        return spawnSync(process.execPath, ["--allow-natives-syntax", join(dir, "bin.js")], { encoding: "utf8" }).stderr
      }
      expect(JSON.parse(probe("line"))).toEqual({ atLoad: false, afterLine: true })
      expect(JSON.parse(probe("silent"))).toEqual({ atLoad: false, later: true })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
