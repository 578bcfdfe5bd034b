// Preloaded into an agent by bench/flood-profile.mjs (`node -r`): counts garbage collections (by
// kind, with their pause time) and the pipe reads of the command's output, and writes them as JSON
// to $FLOOD_STATS when the agent exits. Nothing goes to stdout (the protocol channel).
"use strict"
const { PerformanceObserver, constants } = require("node:perf_hooks")
const { Readable } = require("node:stream")
const fs = require("node:fs")
const kinds = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "scavenge",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "mark-compact",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weak-callbacks"
}
const gc = {}
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const k = kinds[e.detail?.kind ?? e.kind] ?? String(e.detail?.kind ?? e.kind)
    const s = (gc[k] ??= { count: 0, ms: 0 })
    s.count++
    s.ms += e.duration
  }
}).observe({ entryTypes: ["gc"] })
// Reads of every readable but the agent's own stdin: the command's stdout and stderr.
const reads = { count: 0, bytes: 0, sizes: {} }
const push = Readable.prototype.push
Readable.prototype.push = function (chunk, encoding) {
  if (this !== process.stdin && chunk instanceof Uint8Array) {
    reads.count++
    reads.bytes += chunk.length
    const bucket = chunk.length >= 65536 ? "64K" : chunk.length >= 32768 ? "32K-64K" : chunk.length >= 8192 ? "8K-32K" : "<8K"
    reads.sizes[bucket] = (reads.sizes[bucket] ?? 0) + 1
  }
  return push.call(this, chunk, encoding)
}
process.on("exit", () => {
  if (process.env.FLOOD_STATS) fs.writeFileSync(process.env.FLOOD_STATS, JSON.stringify({ gc, reads }))
})
// $FLOOD_HEAP_PROF: a sampling heap profile of every allocation, collected ones included (where
// the young generation's garbage comes from), written there at exit.
if (process.env.FLOOD_HEAP_PROF) {
  const inspector = require("node:inspector")
  const session = new inspector.Session()
  session.connect()
  session.post("HeapProfiler.startSampling", { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  process.on("exit", () => {
    session.post("HeapProfiler.stopSampling", (err, r) => {
      fs.writeFileSync(process.env.FLOOD_HEAP_PROF, JSON.stringify(err ?? r.profile))
    })
  })
}
