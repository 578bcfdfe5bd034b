#!/usr/bin/env node
// Summarizes a sampling heap profile (bench/flood-preload.cjs's $FLOOD_HEAP_PROF) of the bundled
// agent: allocated bytes by allocating function, mapped to the sources, self and inclusive.
//   node bench/heapprofile-summary.mjs FILE [path/to/dist] [--top 40]
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import sourceMap from "source-map-js"

const argv = process.argv.slice(2)
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i < 0 ? fallback : argv[i + 1] }
const [file, distArg] = argv.filter((a, i) => !a.startsWith("--") && !argv[i - 1]?.startsWith("--"))
const top = Number(opt("top", "40"))
const map = new sourceMap.SourceMapConsumer(JSON.parse(readFileSync(join(resolve(distArg ?? "dist"), "dsh-acp.cjs.map"), "utf8")))
const WRAP = "(function (exports, require, module, __filename, __dirname) {".length
const { head } = JSON.parse(readFileSync(file, "utf8"))
const label = (f) => {
  if (f.url.endsWith("dsh-acp.cjs")) {
    const o = map.originalPositionFor({ line: f.lineNumber + 1, column: Math.max(0, f.lineNumber === 0 ? f.columnNumber - WRAP : f.columnNumber) })
    return `${o.name ?? f.functionName ?? "(anonymous)"} ${(o.source ?? "?").replace(/^.*?(node_modules\/|src\/)/, "$1")}:${o.line}`
  }
  return `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\//, "")}:${f.lineNumber + 1}`
}
const self = new Map()
const incl = new Map()
let total = 0
const walk = (node, stack) => {
  const k = label(node.callFrame)
  const bytes = node.selfSize
  total += bytes
  self.set(k, (self.get(k) ?? 0) + bytes)
  const here = stack.includes(k) ? stack : [...stack, k]
  for (const s of here) incl.set(s, (incl.get(s) ?? 0) + bytes)
  for (const c of node.children) walk(c, here)
}
walk(head, [])
const mib = (b) => (b / 1048576).toFixed(1).padStart(7)
console.log(`sampled allocations: ${mib(total)} MiB`)
console.log("self:")
for (const [k, b] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${mib(b)} MiB  ${k}`)
console.log("inclusive, src/ only:")
for (const [k, b] of [...incl].filter(([k]) => k.includes(" src/")).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${mib(b)} MiB  ${k}`)
