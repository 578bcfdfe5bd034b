#!/usr/bin/env node
// The per-call cost of the changed-files display (issue #13): an A/B of two builds in one run,
// interleaved call by call so machine noise hits both alike. B is this checkout; A is the build in
// `--baseline DIR` (a checkout of main with its `build/` and `dist/`), or, without it, this build
// with the work-tree watcher off (`watch: false` / `DSH_ACP_DIFFS_WATCH=0`).
//
// 1. The tracker alone (`build/Tools/Bash/ChangeTracker.js` of each build, in this process): per call
//    the snapshot before (`since`, the call's critical path), the command, the comparison after;
//    against a bare `bash -c true` spawn. Generated git repositories of 1,000 and 20,000 committed
//    files (3 modified, 2 untracked), each build its own copy, and a directory outside git.
//    Shapes: "back to back" (the next call as soon as the last one's comparison ended) and
//    "paused" (50 ms idle between calls); commands `true` and `echo $i > w.txt` (writes a file).
// 2. The agents (`dist/bin.js` of each build) over stdio in the 1,000-file repository, `true` per
//    prompt, paused and back to back: the time to the card's exit and to the prompt's answer (the
//    turn ends after the comparison), against B run with `--no-diffs`.
//
//   npm run build && node bench/changed-files.mjs --baseline /path/to/main-checkout [--baseline-label "main abc1234"]
//                                        measure, print, and write the section of docs/BENCHMARKS.md
//   node bench/changed-files.mjs --short --no-write   fewer rounds, print only
//   node bench/changed-files.mjs --json               the figures as JSON
//
// Timing thresholds live here and in the report, never in tests.
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { commandLine, root, sectionMarkers, writeSection } from "./common.mjs"
import { Client, median, percentile } from "./run.mjs"

const TARGET_MS = 3
const now = () => performance.now()
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const { flag, value: option } = commandLine()
const short = flag("--short")
const baselineDir = option("--baseline")

for (const dir of [root, baselineDir].filter(Boolean)) {
  for (const file of ["build/Tools/Bash/ChangeTracker.js", "dist/bin.js"]) {
    if (!existsSync(join(dir, file))) {
      process.stderr.write(`bench: ${join(dir, file)} is missing: run \`npm run build\` there first\n`)
      process.exit(1)
    }
  }
}
const describeBuild = (dir) => {
  try {
    return execFileSync("git", ["-C", dir, "log", "-1", "--format=%h"], { encoding: "utf8" }).trim()
  } catch {
    return dir
  }
}
const builds = {
  A: baselineDir
    ? { dir: baselineDir, label: `A (baseline: ${option("--baseline-label") ?? describeBuild(baselineDir)})`, config: {}, env: {} }
    : { dir: root, label: "A (this build, watcher off)", config: { watch: false }, env: { DSH_ACP_DIFFS_WATCH: "0" } },
  B: { dir: root, label: `B (this build, ${describeBuild(root)})`, config: {}, env: {} }
}

// ---------------------------------------------------------------------------------------------
// Fixtures

const git = (cwd, ...args) => execFileSync("git", args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } })

/** A committed repository of `count` small text files in directories of 100, plus 3 modified and 2 untracked files. */
const makeRepo = (parent, count) => {
  const dir = join(parent, `repo-${count}`)
  mkdirSync(dir)
  git(dir, "init", "-q")
  git(dir, "config", "user.email", "bench@example.com")
  git(dir, "config", "user.name", "bench")
  git(dir, "config", "commit.gpgsign", "false")
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `d${Math.floor(i / 100)}`)
    if (i % 100 === 0) mkdirSync(sub)
    writeFileSync(join(sub, `f${i}.txt`), `file ${i}\n`.repeat(20))
  }
  git(dir, "add", "-A")
  git(dir, "commit", "-q", "-m", "generated")
  for (let i = 0; i < 3; i++) writeFileSync(join(dir, "d0", `f${i}.txt`), `dirty ${i}\n`)
  writeFileSync(join(dir, "untracked-1.txt"), "u1\n")
  writeFileSync(join(dir, "untracked-2.txt"), "u2\n")
  return dir
}

/** As after any ordinary git command: index stat data fresh and older than the files (no racy entries to re-hash). */
const settle = async (dirs) => {
  await new Promise((r) => setTimeout(r, 1100))
  for (const dir of dirs) git(dir, "update-index", "-q", "--refresh")
}


// ---------------------------------------------------------------------------------------------
// 1. The tracker alone

const spawnClose = (command, args, options) =>
  new Promise((resolveDone, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options })
    child.stdout.resume()
    child.stderr.resume()
    child.on("error", reject)
    child.on("close", () => resolveDone())
  })

const bashRun = (cwd, script) => spawnClose("bash", ["--noprofile", "--norc", "-c", script], { cwd })

const floorCall = async (cwd) => {
  const t0 = now()
  await bashRun(cwd, "true")
  return now() - t0
}

/** A tracker of one build for one "session" (its scope holds the build's watchers). */
const openTracker = async (build, scope) => {
  const T = await import(join(build.dir, "build", "Tools", "Bash", "ChangeTracker.js"))
  return Effect.runPromise(Scope.extend(T.make({ budgetMs: 60_000, ...build.config }), scope))
}

/** One call as the harness makes it: `since` (critical path), the command, then the comparison. */
const trackedCall = async (tracker, cwd, script, expectFiles) => {
  const t0 = now()
  const later = await Effect.runPromise(tracker.since(cwd))
  const t1 = now()
  await bashRun(cwd, script)
  const t2 = now()
  const changed = await Effect.runPromise(later)
  const t3 = now()
  return { beforeMs: t1 - t0, afterMs: t3 - t2, totalMs: t3 - t0, ok: changed.diffs.length === expectFiles }
}

/** Until the build's watcher (if it has one) is armed: the set-up runs after the first comparison. */
const armed = async (tracker, cwd) => {
  if (tracker.watching === undefined) return "no watcher in this build"
  if (!cwd.includes("repo-")) return "outside git: no watcher"
  for (let i = 0; i < 500; i++) {
    const w = await Effect.runPromise(tracker.watching(cwd))
    if (Option.isSome(w) && (w.value.phase === "armed" || w.value.phase === "off")) return w.value.phase
    await sleep(10)
  }
  return "never armed"
}

const summary = (xs) => ({ median: median(xs), p95: percentile(xs, 95) })

/**
 * Rounds of: one call per build (order alternating) and one floor, for one repository, shape and
 * command. `repos[k]` is build k's own copy.
 */
const measureTracker = async ({ label, repos, trackers, shape, command, rounds }) => {
  const calls = { A: [], B: [] }
  const floors = []
  let n = 0
  const script = () => (command === "true" ? "true" : `echo ${++n} > w.txt`)
  const expect = (cwd) => (command === "true" || !cwd.includes("repo-") ? 0 : 1)
  for (const k of ["A", "B"]) {
    for (let i = 0; i < 3; i++) await trackedCall(trackers[k], repos[k], script(), expect(repos[k]))
    calls[k].phase = await armed(trackers[k], repos[k])
    for (let i = 0; i < 2; i++) await trackedCall(trackers[k], repos[k], script(), expect(repos[k]))
  }
  for (let i = 0; i < rounds; i++) {
    for (const k of i % 2 === 0 ? ["A", "B"] : ["B", "A"]) {
      if (shape === "paused") await sleep(50)
      calls[k].push(await trackedCall(trackers[k], repos[k], script(), expect(repos[k])))
    }
    if (shape === "paused") await sleep(50)
    floors.push(await floorCall(repos.A))
  }
  const floor = median(floors)
  const row = (k) => ({
    watcher: calls[k].phase,
    before: summary(calls[k].map((c) => c.beforeMs)),
    after: summary(calls[k].map((c) => c.afterMs)),
    total: summary(calls[k].map((c) => c.totalMs)),
    added: median(calls[k].map((c) => c.totalMs)) - floor,
    ok: calls[k].every((c) => c.ok)
  })
  return { label, shape, command, rounds, floor, A: row("A"), B: row("B") }
}

// CPU time per call, which load stretches far less than wall time: the children's (git, bash) from
// /proc/self/stat, Node's own from process.cpuUsage(). In phases (the counters are process-wide).
const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
const childCpuMs = () => {
  const fields = readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /, "").split(" ")
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLK_TCK
}
const ownCpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const cpuPerCall = async (rounds, fn) => {
  const child0 = childCpuMs()
  const own0 = ownCpuMs()
  for (let i = 0; i < rounds; i++) await fn()
  return { child: (childCpuMs() - child0) / rounds, own: (ownCpuMs() - own0) / rounds }
}

// ---------------------------------------------------------------------------------------------
// 2. The agents

/** One build's agent in `cwd`, its session, and when the last card's exit came. */
const openAgent = async (build, cwd, args, state) => {
  let exitAt
  let stderr = ""
  const client = new Client(join(build.dir, "dist", "bin.js"), {
    args: ["--log-level", "debug", ...args],
    env: { ...build.env, XDG_STATE_HOME: state, DSH_ACP_PERSIST: "0", DSH_ACP_CONTAINMENT: "process-group", DSH_ACP_DIFFS_BUDGET_MS: "60000" },
    onUpdate: ({ update }, at) => {
      if (update._meta?.terminal_exit !== undefined) exitAt = at
    }
  })
  client.child.stderr.on("data", (chunk) => {
    if (stderr.length < 1_000_000) stderr += chunk
  })
  await client.initialize()
  const session = await client.newSession(cwd)
  /** One prompt: ms to the card's exit, and to the answer (the turn's end, after the comparison). */
  const call = async () => {
    const t0 = now()
    const { at } = await client.prompt(session, "true")
    return { exitMs: exitAt - t0, answerMs: at - t0 }
  }
  return { client, call, watching: () => stderr.includes(`changed files: watching`) }
}

const measureAgents = async ({ repo, rounds, state }) => {
  const agents = {
    A: await openAgent(builds.A, repo, [], state),
    B: await openAgent(builds.B, repo, [], state),
    F: await openAgent(builds.B, repo, ["--no-diffs"], state)
  }
  const p = { A: [], B: [], F: [] }
  const b = { A: [], B: [], F: [] }
  try {
    for (const a of Object.values(agents)) for (let i = 0; i < 5; i++) await a.call()
    for (let i = 0; i < 200 && !agents.B.watching(); i++) await sleep(10)
    const bWatching = agents.B.watching()
    const keys = ["A", "B", "F"]
    for (let i = 0; i < rounds; i++) {
      for (const k of [...keys.slice(i % 3), ...keys.slice(0, i % 3)]) {
        await sleep(50)
        p[k].push(await agents[k].call())
        b[k].push(await agents[k].call())
      }
    }
    const stat = (xs, field) => median(xs.map((x) => x[field]))
    const row = (k) => ({
      paused: { exit: stat(p[k], "exitMs"), answer: stat(p[k], "answerMs") },
      backToBack: { exit: stat(b[k], "exitMs"), answer: stat(b[k], "answerMs") }
    })
    return { rounds, bWatching, A: row("A"), B: row("B"), F: row("F") }
  } finally {
    for (const a of Object.values(agents)) await a.client.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const ms = (x) => (x === undefined || !Number.isFinite(x) ? "—" : `${x.toFixed(1)} ms`)
const signed = (x) => (x === undefined || !Number.isFinite(x) ? "—" : `${x >= 0 ? "+" : ""}${x.toFixed(1)} ms`)
const { start: START, end: END } = sectionMarkers("changed-files")

const markdown = (r) => {
  const one = (shape, command) => r.rows.find((x) => x.label.startsWith("git, 1,000") && x.shape === shape && x.command === command)
  const verdict = (row) => (row === undefined ? "—" : row.B.added <= TARGET_MS ? `yes (${signed(row.B.added)})` : `**no** (${signed(row.B.added)})`)
  const e2e = r.agents
  const e2eAdded = (k, shape) => e2e[k][shape].answer - e2e.F[shape].answer
  return [
    START,
    "## Changed files (issue #13)",
    "",
    "Written by `bench/changed-files.mjs` (not by `bench/run.mjs`); rerun with",
    "`npm run build && node bench/changed-files.mjs --baseline <a checkout of main, built> --baseline-label \"main <commit>\"`",
    "(`--short --no-write` to print only; without `--baseline`, A is this build with the watcher off). A baseline without its own",
    "checkout: `git archive main | tar -x -C /tmp/base && ln -s $PWD/node_modules /tmp/base/ && (cd /tmp/base && npm run build)`.",
    `${r.date}, ${r.nproc} CPUs (${r.cpu}), Node ${r.node}, ${r.git}, ${r.short ? "short" : "full"} mode, load average`,
    `${r.load.map((l) => l.toFixed(1)).join(" → ")}: other engineers' jobs share the machine, so compare A and B within this run only.`,
    "",
    `- A: ${builds.A.label}`,
    `- B: ${builds.B.label} — reuses a snapshot while its inotify watcher saw nothing (src/Tools/Bash/WorkTreeWatch.ts).`,
    "",
    "### The tracker alone",
    "",
    "One call = `since` (the snapshot before: the call's critical path) → the command → the comparison",
    "after (a second status; the card's exit goes out before it, the turn's end after it). Each build",
    "its own generated repository (committed files in directories of 100, 3 modified and 2 untracked,",
    "index refreshed), one call of each build per round in alternating order, and a floor (a bare",
    "`bash --noprofile --norc -c true` spawn) per round. Back to back: the next call as soon as the",
    "last comparison ended; paused: 50 ms idle before each. `echo $i > w.txt` writes a file each call.",
    "Added = median call − median floor.",
    "",
    "| repository | shape | command | floor | A before / after | **A added** | B before / after | **B added** | B − A |",
    "|---|---|---|---|---|---|---|---|---|",
    ...r.rows.map((x) =>
      `| ${x.label} | ${x.shape} | \`${x.command === "true" ? "true" : "echo $i > w.txt"}\` | ${ms(x.floor)} | ${ms(x.A.before.median)} / ${ms(x.A.after.median)} | **${signed(x.A.added)}** | ${ms(x.B.before.median)} / ${ms(x.B.after.median)} | **${signed(x.B.added)}** | ${signed(x.B.added - x.A.added)} |`
    ),
    "",
    `Medians of ${r.rows.map((x) => x.rounds).join(" / ")} rounds (rows in order) after 5 warm-up calls per build; B's watcher before the timed calls: ${[...new Set(r.rows.map((x) => x.B.watcher))].join("; ")}.`,
    "B's before and after, when they reuse, are the wait for one full event-loop turn (pending inotify events counted) and the bookkeeping: ~0.5-1 ms",
    "here, of which the loop's own work after a child's exit (its reaping, its pipes' close) is part.",
    "",
    "CPU per call, `true` back to back in the 1,000-file repository, in phases (load stretches CPU time far less than wall time):",
    `A ${ms(r.cpuPerCall.A.child)} children + ${ms(r.cpuPerCall.A.own)} own; B ${ms(r.cpuPerCall.B.child)} children + ${ms(r.cpuPerCall.B.own)} own; floor ${ms(r.cpuPerCall.floor.child)} + ${ms(r.cpuPerCall.floor.own)}.`,
    "",
    "### Through the agent",
    "",
    `Each build's agent (\`dist/bin.js\`, process-group containment, no persistence) in its own session of the 1,000-file repository, plus B with \`--no-diffs\` as the floor;`,
    `per round and agent (order rotating) one \`true\` prompt after 50 ms idle (paused) and one sent as soon as that one was answered (back to back). Medians of ${e2e.rounds} rounds after 5 warm-up prompts; B's watcher armed: ${e2e.bWatching ? "yes" : "**no**"}.`,
    "Exit = prompt sent → the card's exit; answer = prompt sent → the prompt's response (after the comparison).",
    "",
    "| shape | A exit / answer | B exit / answer | `--no-diffs` exit / answer | **A added** (answer) | **B added** (answer) |",
    "|---|---|---|---|---|---|",
    ...["paused", "backToBack"].map((shape) =>
      `| ${shape === "paused" ? "paused" : "back to back"} | ${ms(e2e.A[shape].exit)} / ${ms(e2e.A[shape].answer)} | ${ms(e2e.B[shape].exit)} / ${ms(e2e.B[shape].answer)} | ${ms(e2e.F[shape].exit)} / ${ms(e2e.F[shape].answer)} | **${signed(e2eAdded("A", shape))}** | **${signed(e2eAdded("B", shape))}** |`
    ),
    "",
    `Target ≤ +${TARGET_MS} ms median at 1,000 files (B, the tracker's added total): \`true\` back to back ${verdict(one("back to back", "true"))}, paused ${verdict(one("paused", "true"))}`,
    `(B's before + after timed directly: ${ms(one("back to back", "true")?.B.before.median + one("back to back", "true")?.B.after.median)} back to back, ${ms(one("paused", "true")?.B.before.median + one("paused", "true")?.B.after.median)} paused;`,
    `the outside-git rows, the same code in A and B, show how far apart two medians of the same thing land in this run);`,
    `a command that writes a file ${verdict(one("back to back", "echo"))} — it still pays one status (the after; its before reuses the previous after-status): that is the feature's cost, not met.`,
    `Through the agent (answer, B − \`--no-diffs\`): paused ${signed(e2eAdded("B", "paused"))}, back to back ${signed(e2eAdded("B", "backToBack"))}.`,
    "",
    "Not in the tables, and not free with the watcher:",
    "- a file changed between two calls (an editor's save, a `git add`, anything the watcher sees) makes the next",
    "  call's snapshot a fresh status again (~ the A before column), then its after is free if the command wrote nothing;",
    "- a command that writes files pays one status after it (the rows above); one that creates a directory (or edits a",
    "  `.gitignore`) also makes the watcher re-walk the tree in the background (one `git status --ignored=matching` and a",
    "  listing of every watched directory), and the next call takes a fresh snapshot;",
    "- a session's first call in a work tree pays both statuses, then sets the watcher up in the background (the same re-walk);",
    "- a tree of over 4,096 directories is not watched: the A columns apply.",
    END,
    ""
  ].join("\n")
}

const main = async () => {
  const parent = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-bench-diffs-")))
  const scope = Effect.runSync(Scope.make())
  try {
    process.stderr.write("bench: generating repositories…\n")
    const repos = {}
    for (const k of ["A", "B"]) {
      const dir = join(parent, k)
      mkdirSync(dir)
      repos[k] = { small: makeRepo(dir, 1_000), large: makeRepo(dir, 20_000), outside: join(dir, "outside") }
      mkdirSync(repos[k].outside)
    }
    await settle(["A", "B"].flatMap((k) => [repos[k].small, repos[k].large]))
    const loadBefore = loadavg()[0]
    const trackers = { A: await openTracker(builds.A, scope), B: await openTracker(builds.B, scope) }
    const rows = []
    const plan = [
      ["outside git", "outside", "true", short ? 10 : 30],
      ["git, 1,000 files", "small", "true", short ? 10 : 30],
      ["git, 1,000 files", "small", "echo", short ? 6 : 20],
      ["git, 20,000 files", "large", "true", short ? 5 : 12],
      ["git, 20,000 files", "large", "echo", short ? 4 : 8]
    ]
    for (const [label, which, command, rounds] of plan) {
      for (const shape of ["back to back", "paused"]) {
        process.stderr.write(`bench: ${label}, ${shape}, ${command}\n`)
        rows.push(await measureTracker({ label, repos: { A: repos.A[which], B: repos.B[which] }, trackers, shape, command, rounds }))
      }
    }
    const cpuRounds = short ? 10 : 30
    const cpu = {
      floor: await cpuPerCall(cpuRounds, () => floorCall(repos.A.small)),
      A: await cpuPerCall(cpuRounds, () => trackedCall(trackers.A, repos.A.small, "true", 0)),
      B: await cpuPerCall(cpuRounds, () => trackedCall(trackers.B, repos.B.small, "true", 0))
    }
    await Effect.runPromise(Scope.close(scope, Exit.void))
    process.stderr.write("bench: through the agents…\n")
    const state = join(parent, "state")
    mkdirSync(state)
    const agents = await measureAgents({ repo: repos.B.small, rounds: short ? 8 : 30, state })
    const results = {
      date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
      nproc: availableParallelism(),
      cpu: cpus()[0]?.model ?? "unknown",
      node: process.version,
      git: execFileSync("git", ["--version"], { encoding: "utf8" }).trim(),
      short,
      load: [loadBefore, loadavg()[0]],
      builds: { A: builds.A.label, B: builds.B.label },
      rows,
      cpuPerCall: cpu,
      agents
    }
    if (flag("--json")) process.stdout.write(JSON.stringify(results, null, 2) + "\n")
    else {
      const section = markdown(results)
      process.stdout.write(section)
      if (!flag("--no-write")) {
        writeSection("changed-files", section)
        process.stderr.write("bench: wrote the changed-files section of docs/BENCHMARKS.md\n")
      }
    }
    if (!rows.every((x) => x.A.ok && x.B.ok)) {
      process.stderr.write("bench: a call showed other changes than its own (none for `true`, w.txt for the writer)\n")
      process.exitCode = 1
    }
  } finally {
    rmSync(parent, { recursive: true, force: true })
  }
}

await main()
