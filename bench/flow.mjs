#!/usr/bin/env node
// Backpressure in model mode (issue #11): a model asks for one command that floods its output, and
// the client stops reading the agent's stdout for a while (an editor that stalls), then reads
// again. What is measured is the agent's peak RSS (VmHWM): with bounded queues from the pipe to
// stdout, a stalled client stalls the command's pipe, and the heap does not grow with the flood.
// The "model" is a fake Chat Completions server on 127.0.0.1 (first request: the tool call, second:
// a short answer), so no network and no key are involved.
//
//   npm run build && node bench/flow.mjs   1 GiB flood, 10 s stall, 3 rounds; writes the flow
//                                          section of docs/BENCHMARKS.md
//   node bench/flow.mjs --short --no-write 256 MiB, 1 round, print only
//   node bench/flow.mjs --json             the figures as JSON
//   node bench/flow.mjs --bytes N --stall-ms N --rounds N --agent path/to/bin.js
//   node bench/flow.mjs --no-reference   skip the reference rows (shell mode with the same flood and
//                                        stall; model mode with a command that prints nothing)
//
// Memory thresholds live here and in the report; the test asserts only that growth is bounded.
import { spawn } from "node:child_process"
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { commandLine, root } from "./common.mjs"

const MiB = 1024 * 1024

/** The peak RSS target of issue #11 for a 1 GiB flood with a client stalled for 10 s: 120 MB (114.4 MiB). */
export const TARGET_PEAK_RSS = 120e6

export const floodScript = (bytes) => `head -c ${bytes} /dev/zero | tr '\\0' a`

/** A kernel figure of /proc/<pid>/status in bytes (NaN once the process is gone). */
export const readStatus = (pid, field) => {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith(`${field}:`))
    return line === undefined ? NaN : Number(line.split(/\s+/)[1]) * 1024
  } catch {
    return NaN
  }
}

const sse = (data) => `data: ${JSON.stringify(data)}\n\n`
const chunk = (delta, finish = null) =>
  sse({ id: "chatcmpl-flow", object: "chat.completion.chunk", created: 1_700_000_000, model: "fake", choices: [{ index: 0, delta, finish_reason: finish }] })

/** A Chat Completions server whose model runs `command` once, then answers "done". */
const startModel = (command) =>
  new Promise((resolveServer) => {
    let requests = 0
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        const first = requests++ === 0
        res.writeHead(200, { "content-type": "text/event-stream" })
        const args = JSON.stringify({ command })
        res.end([
          ...(first
            ? [chunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_flood", type: "function", function: { name: "Bash", arguments: args } }] }), chunk({}, "tool_calls")]
            : [chunk({ role: "assistant", content: "done" }), chunk({}, "stop")]),
          "data: [DONE]\n\n"
        ].join(""))
      })
    })
    server.listen(0, "127.0.0.1", () => resolveServer({ url: `http://127.0.0.1:${server.address().port}/v1`, close: () => server.close() }))
  })

/**
 * One round: a fresh agent (so its VmHWM is this round's peak), one prompt whose model floods
 * `bytes`; the client stops reading for `stallMs` right after sending the prompt, then reads on.
 */
export const stalledFloodRound = async ({ agent, bytes, stallMs, mode = "model" }) => {
  // Shell mode (no model: the prompt is the script) is the reference the model mode is held to.
  const model = mode === "model" ? await startModel(floodScript(bytes)) : undefined
  const args = model === undefined ? [] : ["--model", "openai-compatible:fake", "--base-url", model.url, "--approve-all"]
  const child = spawn(process.execPath, [agent, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, DSH_ACP_DIFFS: "0" }
  })
  child.stdin.on("error", () => {})
  let stderr = ""
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (s) => {
    stderr = (stderr + s).slice(-4000)
  })
  const pending = new Map()
  let nextId = 1
  let buffer = ""
  let clientBytes = 0
  let shownBytes = 0
  let exitSeen = false
  let text = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (s) => {
    clientBytes += Buffer.byteLength(s)
    buffer += s
    let nl
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      if (line.trim() === "") continue
      const message = JSON.parse(line)
      if (message.id !== undefined && message.method === undefined) {
        const waiter = pending.get(message.id)
        pending.delete(message.id)
        if (message.error) waiter?.reject(new Error(JSON.stringify(message.error)))
        else waiter?.resolve(message.result)
      } else if (message.method === "session/update") {
        const update = message.params.update
        const data = update._meta?.terminal_output?.data
        if (typeof data === "string") shownBytes += Buffer.byteLength(data)
        if (update._meta?.terminal_exit !== undefined) exitSeen = true
        if (update.sessionUpdate === "agent_message_chunk") text += update.content?.text ?? ""
      } else if (message.id !== undefined) {
        child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } })}\n`)
      }
    }
  })
  const exited = new Promise((r) => child.once("exit", r))
  child.once("exit", () => {
    for (const { reject } of pending.values()) reject(new Error(`agent exited; stderr: ${stderr}`))
  })
  const request = (method, params) =>
    new Promise((resolveRequest, reject) => {
      const id = nextId++
      pending.set(id, { resolve: resolveRequest, reject })
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`)
    })
  try {
    await request("initialize", { protocolVersion: 1, clientCapabilities: { _meta: { terminal_output: true } } })
    const { sessionId } = await request("session/new", { cwd: realpathSync(tmpdir()), mcpServers: [] })
    const before = readStatus(child.pid, "VmHWM")
    const turn = request("session/prompt", { sessionId, prompt: [{ type: "text", text: model === undefined ? floodScript(bytes) : "flood" }] })
    // The editor stops reading: the pipe to it fills, and the agent must stop producing.
    child.stdout.pause()
    await new Promise((r) => setTimeout(r, stallMs))
    const duringStall = readStatus(child.pid, "VmHWM")
    child.stdout.resume()
    const result = await turn
    const peak = readStatus(child.pid, "VmHWM")
    return {
      ok: result.stopReason === "end_turn" && exitSeen && (model === undefined || text.includes("done")),
      stopReason: result.stopReason,
      baseRss: before,
      stallPeakRss: duringStall,
      peakRss: peak,
      clientBytes,
      shownBytes
    }
  } finally {
    child.stdin.end()
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000)
    await exited
    clearTimeout(timer)
    model?.close()
  }
}

export const benchStalledFlood = async ({ agent, bytes, stallMs, rounds, reference = false }) => {
  const results = []
  const shell = []
  const quiet = []
  // Interleaved, so machine noise hits the rows alike.
  for (let i = 0; i < rounds; i++) {
    results.push(await stalledFloodRound({ agent, bytes, stallMs }))
    if (reference) {
      shell.push(await stalledFloodRound({ agent, bytes, stallMs, mode: "shell" }))
      // The model stack's own cost (its modules, the first HTTP request): a command with no output.
      quiet.push(await stalledFloodRound({ agent, bytes: 0, stallMs: 0 }))
    }
  }
  const peakRss = Math.max(...results.map((r) => r.peakRss))
  return {
    bytes,
    stallMs,
    rounds,
    ok: [...results, ...shell, ...quiet].every((r) => r.ok),
    ...(reference ? { shellPeaks: shell.map((r) => r.peakRss), quietPeaks: quiet.map((r) => r.peakRss) } : {}),
    peakRss,
    peaks: results.map((r) => r.peakRss),
    stallPeaks: results.map((r) => r.stallPeakRss),
    baseRss: Math.max(...results.map((r) => r.baseRss)),
    maxClientBytes: Math.max(...results.map((r) => r.clientBytes)),
    target: TARGET_PEAK_RSS,
    met: peakRss <= TARGET_PEAK_RSS
  }
}

const mib = (b) => `${(b / MiB).toFixed(1)} MiB`

export const markdown = (r, argv) =>
  [
    "<!-- flow:start -->",
    "## Model mode: a flood with a stalled client (issue #11)",
    "",
    `A fake model (Chat Completions on 127.0.0.1) asks for \`${floodScript(r.bytes)}\` (${mib(r.bytes)}); the client`,
    `stops reading the agent's stdout for ${r.stallMs / 1000} s right after the prompt, then reads on. ${r.rounds} round(s), a fresh`,
    `agent each; peak RSS is the agent's VmHWM. Machine: ${availableParallelism()} cores shared, load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}.`,
    "",
    "| | measured | target | met |",
    "|---|---|---|---|",
    `| agent peak RSS (VmHWM), worst round | ${mib(r.peakRss)} | ≤ ${mib(r.target)} | ${r.met ? "yes" : "no"} |`,
    `| peak RSS at the end of the stall, per round | ${r.stallPeaks.map(mib).join(", ")} | | |`,
    `| peak RSS per round | ${r.peaks.map(mib).join(", ")} | | |`,
    ...(r.shellPeaks === undefined ? [] : [
      `| reference: shell mode, same flood and stall, peak RSS per round | ${r.shellPeaks.map(mib).join(", ")} | | |`,
      `| reference: model mode, a command with no output, peak RSS per round | ${r.quietPeaks.map(mib).join(", ")} | | |`
    ]),
    `| RSS before the prompt | ${mib(r.baseRss)} | | |`,
    `| bytes the client received (display budget 2 MiB) | ${mib(r.maxClientBytes)} | | |`,
    "",
    "While the client stalls the command is stalled with it (the queues from the pipe through the model turn to",
    "stdout are bounded), so the peak at the end of the stall does not depend on the flood's size. What the flood",
    "adds on top of the no-output reference is about what it adds in shell mode; the rest of the distance to",
    "shell mode is the model stack's own footprint at its first request (its modules, `fetch` and its HTTP parser).",
    "Before the bounded queues (main at a144b06), a 256 MiB version of this run (`--bytes 268435456 --rounds 1`)",
    "peaked at 605.6 MiB: the whole flood piled up in the model turn's queue while the client stalled.",
    "",
    `Rerun: \`npm run build && node bench/flow.mjs${argv.length > 0 ? ` ${argv.join(" ")}` : ""}\``,
    "<!-- flow:end -->",
    ""
  ].join("\n")

const main = async () => {
  const { argv, flag, value } = commandLine()
  const short = flag("--short")
  const agent = resolve(value("--agent") ?? join(root, "dist", "bin.js"))
  const bytes = Number(value("--bytes") ?? (short ? 256 * MiB : 1024 * MiB))
  const stallMs = Number(value("--stall-ms") ?? 10_000)
  const rounds = Number(value("--rounds") ?? (short ? 1 : 3))
  const results = await benchStalledFlood({ agent, bytes, stallMs, rounds, reference: !flag("--no-reference") })
  if (flag("--json")) {
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`)
  } else {
    const section = markdown(results, argv.filter((a) => a !== "--no-write"))
    if (flag("--no-write")) process.stdout.write(section)
    else {
      const file = join(root, "docs", "BENCHMARKS.md")
      const previous = existsSync(file) ? readFileSync(file, "utf8") : ""
      const marked = /<!-- flow:start -->[\s\S]*?<!-- flow:end -->\n?/
      writeFileSync(file, marked.test(previous) ? previous.replace(marked, section) : `${previous.replace(/\n*$/, "\n\n")}${section}`)
      process.stderr.write(section)
      process.stderr.write("bench: wrote the flow section of docs/BENCHMARKS.md\n")
    }
  }
  if (!results.ok) {
    process.stderr.write("bench: some rounds ended wrongly\n")
    process.exitCode = 1
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main()
}
