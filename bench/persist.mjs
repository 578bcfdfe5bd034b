#!/usr/bin/env node
// The cost of session persistence (issue #14): the same prompt through two agents side by side,
// one persisting (the default) and one with `--no-persist`, interleaved round by round so machine
// noise hits both alike; per call, prompt sent → the card's exit received. Two prompts: `true` (the
// fixed cost: prompt, title, card, state records) and `seq 1 20000` (108 KB of output folded into
// the log). Also: the log bytes a call adds, and how long `session/load` of a 200-call session takes.
//
//   npm run build && node bench/persist.mjs     measure, print, write the section of docs/BENCHMARKS.md
//   node bench/persist.mjs --short --no-write   fewer rounds, print only
//   node bench/persist.mjs --json               the figures as JSON
//
// Timing thresholds live here and in the report, never in tests.
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync } from "node:fs"
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { commandLine, root, sectionMarkers, writeSection } from "./common.mjs"
import { median, percentile } from "./run.mjs"

const agentPath = join(root, "dist", "bin.js")
if (!existsSync(agentPath)) {
  process.stderr.write("bench: dist/bin.js is missing: run `npm run build` first\n")
  process.exit(1)
}
const { flag } = commandLine()
const short = flag("--short")
const TARGET_MS = 1
const now = () => performance.now()
const { start: START, end: END } = sectionMarkers("persist")

/** A minimal ACP client over NDJSON stdio: requests, and the time each card's exit arrived. */
class Client {
  constructor(args, env) {
    this.child = spawn(process.execPath, [agentPath, ...args], { stdio: ["pipe", "pipe", "ignore"], env: { ...process.env, ...env } })
    this.child.stdin.on("error", () => {})
    this.nextId = 1
    this.pending = new Map()
    this.exits = new Map()
    this.updates = 0
    let buffer = ""
    this.child.stdout.setEncoding("utf8")
    this.child.stdout.on("data", (chunk) => {
      const at = now()
      buffer += chunk
      let nl
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const message = JSON.parse(buffer.slice(0, nl))
        buffer = buffer.slice(nl + 1)
        if (message.method === "session/update") {
          this.updates++
          const u = message.params.update
          if (u._meta?.terminal_exit !== undefined) this.exits.set(u.toolCallId, { at, exit: u._meta.terminal_exit })
        } else if (message.id !== undefined && message.method === undefined) {
          const waiter = this.pending.get(message.id)
          this.pending.delete(message.id)
          if (message.error) waiter?.reject(new Error(JSON.stringify(message.error)))
          else waiter?.resolve(message.result)
        }
      }
    })
    this.exited = new Promise((r) => this.child.once("exit", r))
  }

  request(method, params) {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n")
    })
  }

  async start(cwd) {
    await this.request("initialize", { protocolVersion: 1, clientCapabilities: { _meta: { terminal_output: true } } })
    this.sessionId = (await this.request("session/new", { cwd, mcpServers: [] })).sessionId
  }

  /** ms from sending the prompt to receiving its card's exit. */
  async timedPrompt(text) {
    const before = new Set(this.exits.keys())
    const sent = now()
    const result = await this.request("session/prompt", { sessionId: this.sessionId, prompt: [{ type: "text", text }] })
    const [id, exit] = [...this.exits].find(([id]) => !before.has(id)) ?? []
    return { ms: exit === undefined ? NaN : exit.at - sent, ok: result.stopReason === "end_turn" && exit?.exit.exit_code === 0 && id !== undefined }
  }

  async close() {
    this.child.stdin.end()
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000)
    await this.exited
    clearTimeout(timer)
  }
}

const logBytes = (state) => {
  const dir = join(state, "dsh-acp", "sessions")
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".jsonl")).reduce((n, f) => n + statSync(join(dir, f)).size, 0) : 0
}

const measure = async (label, prompt, rounds, cwd, state) => {
  const persisting = new Client([], { XDG_STATE_HOME: state })
  const memory = new Client(["--no-persist"], { XDG_STATE_HOME: state })
  await persisting.start(cwd)
  await memory.start(cwd)
  const ms = { persist: [], memory: [] }
  let ok = true
  const warmup = 3
  const bytesBefore = []
  for (let i = 0; i < warmup + rounds; i++) {
    if (i === warmup) bytesBefore.push(logBytes(state))
    // Alternate which goes first, so neither always runs right after the other's work.
    const order = i % 2 === 0 ? [["persist", persisting], ["memory", memory]] : [["memory", memory], ["persist", persisting]]
    for (const [key, client] of order) {
      await new Promise((r) => setTimeout(r, 20))
      const { ms: t, ok: good } = await client.timedPrompt(prompt)
      ok &&= good
      if (i >= warmup) ms[key].push(t)
    }
  }
  const bytesPerCall = (logBytes(state) - bytesBefore[0]) / rounds
  await persisting.close()
  await memory.close()
  return {
    label,
    rounds,
    ok,
    persist: { median: median(ms.persist), p95: percentile(ms.persist, 95) },
    memory: { median: median(ms.memory), p95: percentile(ms.memory, 95) },
    overhead: median(ms.persist) - median(ms.memory),
    bytesPerCall
  }
}

/** `session/load` of a session of `calls` prompts (each a card with ~1 KB of output), in a fresh agent. */
const measureLoad = async (calls, cwd, state, rounds) => {
  const writer = new Client([], { XDG_STATE_HOME: state })
  await writer.start(cwd)
  for (let i = 0; i < calls; i++) await writer.timedPrompt(`seq ${i} ${i + 200}`)
  const sessionId = writer.sessionId
  await writer.close()
  const ms = []
  let updates = 0
  for (let r = 0; r < rounds; r++) {
    const reader = new Client([], { XDG_STATE_HOME: state })
    await reader.request("initialize", { protocolVersion: 1, clientCapabilities: { _meta: { terminal_output: true } } })
    const sent = now()
    await reader.request("session/load", { sessionId, cwd, mcpServers: [] })
    ms.push(now() - sent)
    updates = reader.updates
    await reader.close()
  }
  const file = join(state, "dsh-acp", "sessions", `${sessionId}.jsonl`)
  return { calls, rounds, median: median(ms), p95: percentile(ms, 95), updates, logBytes: statSync(file).size }
}

/**
 * The write path alone, in process (the compiled library, `build/`): the records one `true` call
 * adds (prompt, card start, output, end, turn end, state), encoded and appended, timed per call.
 * Free of the process noise that dominates the end-to-end figures.
 */
const measureWrites = async (state, calls) => {
  const Effect = await import("effect/Effect")
  const Store = await import(join(root, "build", "Bridge", "SessionStore.js"))
  const SessionLog = await import(join(root, "build", "Bridge", "SessionLog.js"))
  const Intent = await import(join(root, "build", "Presentation", "Intent.js"))
  const { exited } = await import(join(root, "build", "Terminal", "ExitStatus.js"))
  const config = { dir: join(state, "writes"), maxBytes: Store.DEFAULT_MAX_BYTES, harness: "shell", pageSize: 50 }
  const id = "dsh-bench-writes"
  const log = Store.create(config, { magic: SessionLog.MAGIC, v: 1, t: "header", id, cwd: "/tmp", harness: "shell", createdAt: new Date().toISOString() })
  const records = (n) => [
    { t: "prompt", at: new Date().toISOString(), blocks: [{ _tag: "Text", text: "true" }] },
    { t: "event", e: { _tag: "ToolCallStarted", callId: `c${n}`, pending: false, presentation: Intent.TerminalCall.make({ title: "true", cwd: "/tmp", input: { command: "true" } }) } },
    { t: "event", e: { _tag: "ToolOutput", callId: `c${n}`, data: "some output\n" } },
    { t: "event", e: { _tag: "ToolCallCompleted", callId: `c${n}`, presentation: Intent.TerminalResult.make({ output: "some output\n", exit: exited(0), statusLines: ["[exit code: 0]"], facts: { exit_code: 0, signal: null } }) } },
    { t: "turnEnd", stopReason: "end_turn" },
    { t: "state", cwd: `/tmp/${n % 2}`, memory: [] }
  ]
  const us = []
  for (let n = 0; n < calls; n++) {
    const batch = records(n)
    const start = now()
    for (const record of batch) Effect.runSync(log.append(record))
    us.push((now() - start) * 1000)
  }
  Effect.runSync(log.close)
  return { calls, median: median(us), p95: percentile(us, 95), bytes: statSync(Store.logPath(config, id)).size / calls }
}

const fmt = (ms) => (Number.isNaN(ms) ? "–" : ms.toFixed(2))

const markdown = (r) => {
  const lines = [
    START,
    "## Session persistence (per call)",
    "",
    `Measured ${r.date} with \`node bench/persist.mjs${r.short ? " --short" : ""}\`: ${r.nproc} CPUs (${r.cpu}), Node ${r.node}, load average ${r.loadavg.map((l) => l.toFixed(1)).join(" → ")} (other work shared the machine).`,
    "Two agents side by side, the default (persisting) and `--no-persist`, interleaved per round (the first of each pair alternates);",
    "per call: `session/prompt` sent → the card's `terminal_exit` received. The log is written synchronously, one `write` per record.",
    "",
    "| prompt | rounds | persisting median / p95 (ms) | `--no-persist` median / p95 (ms) | overhead (median, ms) | log bytes per call | target ≤ 1 ms |",
    "|---|---|---|---|---|---|---|",
    ...r.rows.map((row) =>
      `| \`${row.label}\` | ${row.rounds} | ${fmt(row.persist.median)} / ${fmt(row.persist.p95)} | ${fmt(row.memory.median)} / ${fmt(row.memory.p95)} | ${fmt(row.overhead)} | ${Math.round(row.bytesPerCall)} | ${row.overhead <= TARGET_MS ? "met" : "not met"} |`
    ),
    "",
    `The write path alone (in process, the records of one \`true\` call encoded and appended, ${r.writes.calls} calls): median ${r.writes.median.toFixed(0)} µs, p95 ${r.writes.p95.toFixed(0)} µs per call, ${Math.round(r.writes.bytes)} bytes.`,
    "",
    `\`session/load\` of a ${r.loadSession.calls}-call session (${(r.loadSession.logBytes / 1024).toFixed(0)} KiB log, ${r.loadSession.updates} updates replayed), request → response in a fresh agent: median ${fmt(r.loadSession.median)} ms, p95 ${fmt(r.loadSession.p95)} ms (${r.loadSession.rounds} rounds).`,
    "",
    "The end-to-end overhead is the difference of two medians of process timings whose spread (the p95s)",
    "is far larger under load: it comes out anywhere from negative to several ms from run to run. The",
    "in-process write path is the cost itself. Output is folded per card before it is written (at most one",
    "record per second per card, or per 64 KiB), so a long output costs about its own size once more, not a",
    "record per chunk; a card's result text (what a text-only client shows) is stored next to it.",
    END,
    ""
  ]
  return lines.join("\n")
}

const main = async () => {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-bench-persist-cwd-")))
  const state = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-bench-persist-state-")))
  try {
    const loadBefore = loadavg()[0]
    const rounds = short ? 10 : 40
    const rows = [
      await measure("true", "true", rounds, cwd, state),
      await measure("seq 1 20000", "seq 1 20000", rounds, cwd, state)
    ]
    const writes = await measureWrites(state, short ? 500 : 5000)
    const load = await measureLoad(short ? 50 : 200, cwd, state, short ? 3 : 7)
    const results = {
      date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
      nproc: availableParallelism(),
      cpu: cpus()[0]?.model ?? "unknown",
      node: process.version,
      short,
      loadavg: [loadBefore, loadavg()[0]],
      rows,
      writes,
      loadSession: load
    }
    if (flag("--json")) process.stdout.write(JSON.stringify(results, null, 2) + "\n")
    else {
      const section = markdown(results)
      process.stdout.write(section)
      if (!flag("--no-write")) {
        writeSection("persist", section)
        process.stderr.write("bench: wrote the persist section of docs/BENCHMARKS.md\n")
      }
    }
    if (!rows.every((r) => r.ok)) {
      process.stderr.write("bench: a call did not end as expected\n")
      process.exitCode = 1
    }
  } finally {
    rmSync(cwd, { recursive: true, force: true })
    rmSync(state, { recursive: true, force: true })
  }
}

await main()
