#!/usr/bin/env node
// One flood through an agent, with what it cost inside (issue #11): `head -c N | tr` in shell mode,
// the agent's wall and CPU time, its peak RSS, its garbage collections and the pipe reads it got
// (bench/flood-preload.cjs), optionally a CPU profile (summarize it with bench/cpuprofile-summary.mjs).
//   node bench/flood-profile.mjs --agent dist/bin.js [--mib 256] [--rounds 1] [--cpu-prof DIR] [--env K=V]…
import { mkdtempSync, readFileSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Client, median } from "./run.mjs"

const argv = process.argv.slice(2)
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i < 0 ? fallback : argv[i + 1] }
const agent = opt("agent", "dist/bin.js")
const mib = Number(opt("mib", "256"))
const rounds = Number(opt("rounds", "1"))
const profDir = opt("cpu-prof", undefined)
const env = Object.fromEntries(argv.flatMap((a, i) => (argv[i - 1] === "--env" ? [a.split("=")] : [])))
const script = `head -c ${mib * 1048576} /dev/zero | tr '\\0' a`
const preload = fileURLToPath(new URL("./flood-preload.cjs", import.meta.url))
const cpu = (pid) => { const x = readFileSync(`/proc/${pid}/stat`, "utf8"); const f = x.slice(x.lastIndexOf(")") + 2).split(" "); return (Number(f[11]) + Number(f[12])) * 10 }
const hwm = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024

const results = []
for (let i = 0; i < rounds; i++) {
  const stats = join(mkdtempSync(join(tmpdir(), "flood-stats-")), "stats.json")
  let exitAt
  let updates = 0
  const nodeArgs = ["-r", preload, ...(profDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", profDir])]
  const c = new Client(agent, {
    nodeArgs,
    env: { FLOOD_STATS: stats, ...env },
    onUpdate: ({ update }, at) => { updates++; if (update._meta?.terminal_exit !== undefined) exitAt = at }
  })
  await c.initialize()
  const s = await c.newSession(realpathSync(tmpdir()))
  const cpu0 = cpu(c.pid)
  const t0 = performance.now()
  await c.prompt(s, script)
  const r = { ms: exitAt - t0, cpu: cpu(c.pid) - cpu0, rss: hwm(c.pid), updates, clientBytes: c.bytes }
  await c.close()
  await c.exited
  Object.assign(r, JSON.parse(readFileSync(stats, "utf8")))
  results.push(r)
  const gc = Object.entries(r.gc).map(([k, v]) => `${k} ${v.count} (${v.ms.toFixed(0)} ms)`).join(", ")
  console.log(`round ${i + 1}: ${r.ms.toFixed(0)} ms, agent CPU ${r.cpu} ms, peak RSS ${r.rss.toFixed(1)} MiB, updates ${updates}, client bytes ${(c.bytes / 1048576).toFixed(2)} MiB`)
  console.log(`  gc: ${gc}`)
  console.log(`  reads: ${r.reads.count} (${(r.reads.bytes / r.reads.count / 1024).toFixed(1)} KiB avg) ${JSON.stringify(r.reads.sizes)}`)
}
if (rounds > 1) console.log(`median ${median(results.map((r) => r.ms)).toFixed(0)} ms, CPU ${median(results.map((r) => r.cpu)).toFixed(0)} ms, max RSS ${Math.max(...results.map((r) => r.rss)).toFixed(1)} MiB`)
