#!/usr/bin/env node
// Per-call cost in a continuous burst (issue #11): each `true` prompt sent as soon as the last one is
// answered, for N calls, per build and containment mode (builds alternated, repeated), against the
// floor (Node spawning `bash -c true` in the same loop). Unlike run.mjs's "back to back" call (the
// second call of a pair, after a pause), nothing here is idle: no spare process is ever ready,
// and the agent's own CPU per call (from /proc) is what the floor's is compared with.
//   node bench/burst.mjs CALLS REPEATS label=path/to/bin.js [label=path …]
import { readFileSync, realpathSync } from "node:fs"
import { spawn } from "node:child_process"
import { Client, median } from "./run.mjs"

const TICK = 10 // ms per clock tick (getconf CLK_TCK = 100)
const cpuMs = (pid) => { const x = readFileSync(`/proc/${pid}/stat`, "utf8"); const f = x.slice(x.lastIndexOf(")") + 2).split(" "); return (Number(f[11]) + Number(f[12])) * TICK }
const [calls, repeats, ...builds] = process.argv.slice(2)
const N = Number(calls)
const burst = async (path, env) => {
  const c = new Client(path, { env })
  await c.initialize()
  const s = await c.newSession(realpathSync("/tmp"))
  for (let i = 0; i < 10; i++) await c.prompt(s, "true")
  const ms = []
  const cpu0 = cpuMs(c.pid)
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    await c.prompt(s, "true")
    ms.push(performance.now() - t0)
  }
  const cpu = (cpuMs(c.pid) - cpu0) / N
  await c.close()
  return { median: median(ms), cpu }
}
const floor = async () => {
  const ms = []
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    await new Promise((r) => spawn("bash", ["--noprofile", "--norc", "-c", "true"], { stdio: ["ignore", "pipe", "pipe"] }).on("close", r))
    ms.push(performance.now() - t0)
  }
  return median(ms)
}
const rows = new Map()
const floors = []
for (let r = 0; r < Number(repeats); r++) {
  for (const b of builds) {
    const [label, path] = b.split("=")
    for (const [mode, env] of [["bwrap", {}], ["pg", { DSH_ACP_CONTAINMENT: "process-group" }]]) {
      const key = `${label}/${mode}`
      if (!rows.has(key)) rows.set(key, [])
      rows.get(key).push(await burst(path, env))
    }
  }
  floors.push(await floor())
}
const f = median(floors)
console.log(`${N} calls back to back per burst, ${repeats} bursts per row; medians of the bursts' medians`)
console.log(`floor ${f.toFixed(1)} ms`)
for (const [key, rs] of rows) {
  const m = median(rs.map((x) => x.median))
  console.log(`${key.padEnd(24)} ${m.toFixed(1)} ms (${(m - f) >= 0 ? "+" : ""}${(m - f).toFixed(1)}) | agent CPU per call ${median(rs.map((x) => x.cpu)).toFixed(1)} ms`)
}
