#!/usr/bin/env node
// Per-call A/B of builds of the command, interleaved call by call (issue #11): for each build, both
// containment modes; per round and agent one `true` call 25 ms after an untimed one ("paused") and one sent as
// soon as that one is answered ("back to back"); the floor (`bash -c true` from Node) once per round.
// Also the agent's CPU time per call (own, and its reaped children: bwrap), which load stretches less.
//   node bench/ab-call.mjs ROUNDS WARMUP label=path/to/bin.js [label=path …]
import { Client, median, percentile } from "./run.mjs"
import { realpathSync } from "node:fs"
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
const TICK = 10 // ms per clock tick (getconf CLK_TCK = 100)
const cpu = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, "utf8"); const x = f.slice(f.lastIndexOf(")") + 2).split(" "); return { own: (Number(x[11]) + Number(x[12])) * TICK, children: (Number(x[13]) + Number(x[14])) * TICK } }
const [rounds, warm, ...builds] = process.argv.slice(2)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const agents = []
for (const b of builds) {
  const [label, path] = b.split("=")
  for (const [mode, env] of [["bwrap", {}], ["pg", { DSH_ACP_CONTAINMENT: "process-group" }]]) {
    let exitAt
    const c = new Client(path, { env, onUpdate: ({ update }, at) => { if (update._meta?.terminal_exit !== undefined) exitAt = at } })
    await c.initialize()
    const s = await c.newSession(realpathSync("/tmp"))
    agents.push({ label: `${label}/${mode}`, call: async () => { const t0 = performance.now(); await c.prompt(s, "true"); return exitAt - t0 }, c, p: [], b: [], pid: c.pid })
  }
}
const floor = () => new Promise((r) => { const t0 = performance.now(); const ch = spawn("bash", ["--noprofile", "--norc", "-c", "true"], { stdio: ["ignore", "pipe", "pipe"] }); ch.on("close", () => r(performance.now() - t0)) })
const fl = []
for (let i = 0; i < Number(warm) + Number(rounds); i++) {
  if (i === Number(warm)) for (const a of agents) a.cpu0 = cpu(a.pid)
  for (const a of [...agents.slice(i % agents.length), ...agents.slice(0, i % agents.length)]) {
    // Settle (the previous agent's idle work, spare top-ups, is over), then an untimed call, so the
    // timed "paused" call comes exactly 25 ms after this agent's previous call (see run.mjs).
    await sleep(100)
    await a.call()
    await sleep(25)
    const p = await a.call(); const b = await a.call()
    if (i >= Number(warm)) { a.p.push(p); a.b.push(b) }
  }
  const f = await floor(); if (i >= Number(warm)) fl.push(f)
}
for (const a of agents) { const c1 = cpu(a.pid); a.cpuOwn = (c1.own - a.cpu0.own) / (3 * Number(rounds)); a.cpuChildren = (c1.children - a.cpu0.children) / (3 * Number(rounds)) } // three calls a round: untimed, paused, back to back
const fm = median(fl)
console.log("floor median", fm.toFixed(1), "p95", percentile(fl, 95).toFixed(1))
for (const a of agents) console.log(a.label.padEnd(14), "paused", median(a.p).toFixed(1), "p95", percentile(a.p, 95).toFixed(1), "over", (median(a.p) - fm).toFixed(1), "| b2b", median(a.b).toFixed(1), "p95", percentile(a.b, 95).toFixed(1), "over", (median(a.b) - fm).toFixed(1), "| CPU/call own", a.cpuOwn.toFixed(2), "children", a.cpuChildren.toFixed(2))
for (const a of agents) await a.c.close()
