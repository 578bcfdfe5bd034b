#!/usr/bin/env node
// Start-up A/B of builds of the command, interleaved round by round: spawn → `initialize`
// answered, spawn → `session/new` answered (Zed sends it right after `initialize`), and spawn →
// the first `true` prompt answered (so a cost moved out of `session/new` into the first command
// shows). Each agent keeps its sessions in a temp state directory. The first round is discarded
// (page cache); medians, and the spread (p25-p75), of the rest. Also the agent's main-thread CPU time
// when `initialize` is answered (/proc/PID/schedstat, ns): what the start costs on the thread that
// answers, much less stretched than wall time on a shared machine. It is read when the answer
// arrives, by then the agent may have started the bwrap probe (~5 ms of that thread): run with
// DSH_ACP_CONTAINMENT=process-group for a figure of the start alone. A path that is not a script
// (`dist/dsh-acp`, the snapshot launcher) is run as it is; with exec, its pid's CPU includes the
// shell's. `label=floor` is bench/run.mjs's floor: bare node answering `initialize` (no sessions).
// Every start runs without NODE_EXTRA_CA_CERTS (bench/run.mjs START_ENV says why); `--with-ca` keeps it.
//   node bench/ab-start.mjs ROUNDS label=path/to/bin.js [label=path/to/dsh-acp …] [floor=floor] [--with-ca]
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client, FLOOR_SERVER, median, percentile, START_ENV } from "./run.mjs"

const argv = process.argv.slice(2)
const baseEnv = argv.includes("--with-ca") ? process.env : START_ENV
const [rounds, ...builds] = argv.filter((a) => a !== "--with-ca")
const agents = builds.map((b) => {
  const [label, path] = b.split("=")
  return { label, path, init: [], initCpu: [], session: [], prompt: [] }
})
const state = mkdtempSync(join(tmpdir(), "dsh-acp-ab-start-"))
const cwd = mkdtempSync(join(tmpdir(), "dsh-acp-ab-start-cwd-"))
try {
  for (let i = 0; i < Number(rounds); i++) {
    for (const a of agents) {
      const start = performance.now()
      const floor = a.path === "floor"
      const c = floor
        ? new Client("floor.js", { nodeArgs: ["-e", FLOOR_SERVER], baseEnv })
        : new Client(a.path, { env: { XDG_STATE_HOME: state }, baseEnv })
      await c.initialize()
      const init = performance.now() - start
      const initCpu = Number(readFileSync(`/proc/${c.pid}/schedstat`, "utf8").split(" ")[0]) / 1e6
      let session = NaN, prompt = NaN
      if (!floor) {
        const id = await c.newSession(cwd)
        session = performance.now() - start
        await c.prompt(id, "true")
        prompt = performance.now() - start
      }
      await c.close()
      if (i === 0) continue
      a.init.push(init)
      a.initCpu.push(initCpu)
      a.session.push(session)
      a.prompt.push(prompt)
    }
  }
} finally {
  rmSync(state, { recursive: true, force: true })
  rmSync(cwd, { recursive: true, force: true })
}
const show = (xs) => xs.some(Number.isNaN) ? "—" : `${median(xs).toFixed(1)} (${percentile(xs, 25).toFixed(0)}-${percentile(xs, 75).toFixed(0)})`
console.log(`${Number(rounds) - 1} rounds, medians in ms (p25-p75)`)
console.log("| build | → initialize | main-thread CPU at initialize | → session/new | → first `true` answered |\n|---|---|---|---|---|")
for (const a of agents) console.log(`| ${a.label} | ${show(a.init)} | ${show(a.initCpu)} | ${show(a.session)} | ${show(a.prompt)} |`)
