#!/usr/bin/env node
// Flood A/B of builds of the command, interleaved (issue #11): `head -c N | tr` through each build
// (a fresh agent per round, peak RSS from VmHWM) and the same command to /dev/null, per round.
//   node bench/ab-flood.mjs MIB ROUNDS label=path/to/bin.js [label=path …]
import { Client, median } from "./run.mjs"
import { realpathSync, readFileSync } from "node:fs"
import { spawn } from "node:child_process"
const [mib, rounds, ...agents] = process.argv.slice(2)
const script = `head -c ${Number(mib) * 1048576} /dev/zero | tr '\\0' a`
/** The agent's own CPU time (ms), from /proc (CLK_TCK = 100): load stretches it far less than wall time. */
const cpu = (pid) => { const x = readFileSync(`/proc/${pid}/stat`, "utf8"); const f = x.slice(x.lastIndexOf(")") + 2).split(" "); return (Number(f[11]) + Number(f[12])) * 10 }
const hwm = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024
const one = async (agent) => {
  let exitAt
  const c = new Client(agent, { onUpdate: ({ update }, at) => { if (update._meta?.terminal_exit !== undefined) exitAt = at } })
  await c.initialize()
  const s = await c.newSession(realpathSync("/tmp"))
  const cpu0 = cpu(c.pid)
  const t0 = performance.now()
  await c.prompt(s, script)
  const rss = hwm(c.pid)
  const used = cpu(c.pid) - cpu0
  await c.close()
  return { ms: exitAt - t0, rss, cpu: used }
}
const floor = () => new Promise((r) => { const t0 = performance.now(); spawn("bash", ["-c", `${script} > /dev/null`]).on("close", () => r({ ms: performance.now() - t0, rss: 0, cpu: 0 })) })
const res = Object.fromEntries([["floor", []], ...agents.map((a) => [a.split("=")[0], []])])
for (let i = 0; i < Number(rounds); i++) {
  for (const a of agents) { const [l, p] = a.split("="); res[l].push(await one(p)) }
  res.floor.push(await floor())
}
const f = median(res.floor.map((r) => r.ms))
for (const [l, rs] of Object.entries(res)) console.log(l.padEnd(10), "median", median(rs.map((r) => r.ms)).toFixed(0), "ms", "ratio", (median(rs.map((r) => r.ms)) / f).toFixed(2), "RSS MiB median", (median(rs.map((r) => r.rss)) / 1048576).toFixed(1), "max", (Math.max(...rs.map((r) => r.rss)) / 1048576).toFixed(1), "(runs", rs.map((r) => (r.rss / 1048576).toFixed(0)).join(" ") + ")", "agent CPU", l === "floor" ? "-" : median(rs.map((r) => r.cpu)).toFixed(0), "runs", rs.map((r) => r.ms.toFixed(0)).join(" "))
