#!/usr/bin/env node
// The floors of the flood (issue #11), interleaved per round: the command to /dev/null (what
// ab-flood calls the floor), the same through `| cat` to /dev/null (any reader of a pipe), and a
// bare Node process reading the command's stdout (Node's own socketpair, as the agent gets it) and
// discarding it: the least any Node agent can do. Wall time from spawn to close; CPU of the reader.
//   node bench/flood-floors.mjs [MIB=1024] [ROUNDS=5]
import { spawn } from "node:child_process"
import { median } from "./run.mjs"

const [mib = "1024", rounds = "5"] = process.argv.slice(2)
const script = `head -c ${Number(mib) * 1048576} /dev/zero | tr '\\0' a`
const timed = (args, onChild) => new Promise((resolve) => {
  const t0 = performance.now()
  const c = spawn("bash", ["-c", args], { stdio: ["ignore", "pipe", "pipe"] })
  onChild?.(c)
  c.on("close", () => resolve(performance.now() - t0))
})
const bare = () => new Promise((resolve) => {
  const child = spawn(process.execPath, ["--input-type=module", "-e", `
    import { spawn } from "node:child_process"
    const t0 = performance.now()
    let n = 0, reads = 0
    const c = spawn("bash", ["-c", ${JSON.stringify(script)}], { stdio: ["ignore", "pipe", "pipe"] })
    c.stdout.on("data", (b) => { n += b.length; reads++ })
    c.on("close", () => { const u = process.cpuUsage(); process.stdout.write(JSON.stringify({ ms: performance.now() - t0, cpu: (u.user + u.system) / 1000, n, reads })) })
  `], { stdio: ["ignore", "pipe", "inherit"] })
  let out = ""
  child.stdout.on("data", (d) => (out += d))
  child.on("close", () => resolve(JSON.parse(out)))
})
const res = { devnull: [], cat: [], node: [] }
for (let i = 0; i < Number(rounds); i++) {
  res.devnull.push(await timed(`${script} > /dev/null`))
  res.cat.push(await timed(`${script} | cat > /dev/null`))
  res.node.push(await bare())
}
const f = median(res.devnull)
console.log(`/dev/null        median ${f.toFixed(0)} ms   runs ${res.devnull.map((x) => x.toFixed(0)).join(" ")}`)
console.log(`| cat            median ${median(res.cat).toFixed(0)} ms = ${(median(res.cat) / f).toFixed(2)}x   runs ${res.cat.map((x) => x.toFixed(0)).join(" ")}`)
console.log(`bare Node reader median ${median(res.node.map((r) => r.ms)).toFixed(0)} ms = ${(median(res.node.map((r) => r.ms)) / f).toFixed(2)}x, its CPU ${median(res.node.map((r) => r.cpu)).toFixed(0)} ms, reads ${median(res.node.map((r) => r.reads)).toFixed(0)}   runs ${res.node.map((r) => r.ms.toFixed(0)).join(" ")}`)
