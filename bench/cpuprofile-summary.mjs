#!/usr/bin/env node
// Summarizes a V8 .cpuprofile of the bundled agent (dist/dsh-acp.cjs): self time per function, the
// bundle's positions mapped back to the sources through its source map, and the share of GC, idle
// and program time.
//   node bench/cpuprofile-summary.mjs FILE.cpuprofile [path/to/dist] [--top 40] [--by file]
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import sourceMap from "source-map-js"

const argv = process.argv.slice(2)
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i < 0 ? fallback : argv[i + 1] }
const [file, distArg] = argv.filter((a, i) => !a.startsWith("--") && !argv[i - 1]?.startsWith("--"))
const dist = resolve(distArg ?? "dist")
const top = Number(opt("top", "40"))
const by = opt("by", "function")
const profile = JSON.parse(readFileSync(file, "utf8"))
const map = new sourceMap.SourceMapConsumer(JSON.parse(readFileSync(join(dist, "dsh-acp.cjs.map"), "utf8")))
// The loader wraps the bundle in a function header on its first line (scripts/bundle.mjs).
const WRAP = "(function (exports, require, module, __filename, __dirname) {".length

const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map()
const dt = profile.timeDeltas
for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0))
const total = [...self.values()].reduce((a, b) => a + b, 0)

const label = (n) => {
  const f = n.callFrame
  if (f.url.endsWith("dsh-acp.cjs")) {
    const column = f.lineNumber === 0 ? f.columnNumber - WRAP : f.columnNumber
    const o = map.originalPositionFor({ line: f.lineNumber + 1, column: Math.max(0, column) })
    const src = (o.source ?? "?").replace(/^.*?(node_modules\/|src\/)/, "$1")
    if (by === "file") return src
    return `${o.name ?? f.functionName ?? "(anonymous)"} ${src}:${o.line}`
  }
  if (by === "file") return f.url === "" ? `(${f.functionName || "native"})` : f.url.replace(/^node:/, "node:")
  return `${f.functionName || "(anonymous)"} ${f.url === "" ? "" : `${f.url.replace(/^.*\//, "")}:${f.lineNumber + 1}`}`.trim()
}
const sums = new Map()
for (const [id, us] of self) {
  const k = label(byId.get(id))
  sums.set(k, (sums.get(k) ?? 0) + us)
}
const ms = (us) => (us / 1000).toFixed(1).padStart(8)
const pick = (name) => sums.get(`(${name})`) ?? 0
console.log(`total ${ms(total)} ms sampled; idle ${ms(pick("idle"))}, gc ${ms(pick("garbage collector"))}, program ${ms(pick("program"))}`)
const busy = total - pick("idle")
console.log(`busy ${ms(busy)} ms; gc ${(100 * pick("garbage collector") / busy).toFixed(1)}% of busy`)
for (const [k, us] of [...sums].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)} ms ${(100 * us / busy).toFixed(1).padStart(5)}%  ${k}`)
// Inclusive time (a sample counts once for every function on its stack), for the sources' own functions.
if (argv.includes("--inclusive")) {
  const parent = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const incl = new Map()
  for (let i = 0; i < profile.samples.length; i++) {
    const seen = new Set()
    for (let id = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const k = label(byId.get(id))
      if (!k.includes(" src/") || seen.has(k)) continue
      seen.add(k)
      incl.set(k, (incl.get(k) ?? 0) + (dt[i] ?? 0))
    }
  }
  console.log("inclusive, src/ only:")
  for (const [k, us] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)} ms ${(100 * us / busy).toFixed(1).padStart(5)}%  ${k}`)
}
