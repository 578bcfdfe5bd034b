#!/usr/bin/env node
// The per-call cost of the changed-files display (issue #13): a git status snapshot before a
// command and a comparison after it, for `true`, in generated git repositories of 1,000 and
// 20,000 committed files (a few dirty and untracked files in each), and outside git. Measured
// against its floor, a bare `bash --noprofile --norc -c true` spawn, interleaved in one run.
//
// It drives the compiled library (`build/`), not the agent: the lead wires it into the harnesses.
//
//   npx tsc -p tsconfig.build.json && node bench/changed-files.mjs
//                                        measure, print, and write the section of docs/BENCHMARKS.md
//   node bench/changed-files.mjs --short --no-write   fewer rounds, print only
//   node bench/changed-files.mjs --json               the figures as JSON
//
// Timing thresholds live here and in the report, never in tests.
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { median, percentile } from "./run.mjs"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const built = join(root, "build", "Tools", "Bash", "ChangedFiles.js")
if (!existsSync(built)) {
  process.stderr.write("bench: build/ is missing: run `npx tsc -p tsconfig.build.json` first\n")
  process.exit(1)
}
const ChangedFiles = await import(built)
const { gitEnv } = await import(join(root, "build", "Tools", "Bash", "Git.js"))

const TARGET_MS = 3
const now = () => performance.now()

const argv = process.argv.slice(2)
const flag = (name) => argv.includes(name)
const short = flag("--short")

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
// Measurements

const spawnClose = (command, args, options) =>
  new Promise((resolveDone, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options })
    child.stdout.resume()
    child.stderr.resume()
    child.on("error", reject)
    child.on("close", () => resolveDone())
  })

const bashTrue = (cwd) => spawnClose("bash", ["--noprofile", "--norc", "-c", "true"], { cwd })

/** One call with the feature: snapshot → `true` → compare. Times each part. */
const withDiffs = async (cwd) => {
  const t0 = now()
  const before = await Effect.runPromise(ChangedFiles.snapshot(cwd))
  const t1 = now()
  await bashTrue(cwd)
  const t2 = now()
  const changes = Option.isSome(before) ? await Effect.runPromise(ChangedFiles.changes(before.value)) : undefined
  const t3 = now()
  return {
    beforeMs: t1 - t0,
    afterMs: t3 - t2,
    totalMs: t3 - t0,
    snapshot: Option.isSome(before),
    shown: changes?.files.length ?? 0,
    copiedBytes: Option.isSome(before) ? before.value.copiedBytes : 0
  }
}

const floor = async (cwd) => {
  const t0 = now()
  await bashTrue(cwd)
  return now() - t0
}

/** One bare `git status` as the snapshot runs it (the least a git-based snapshot can cost). */
const gitStatusAlone = async (cwd) => {
  const t0 = now()
  await spawnClose("git", ["-C", cwd, "-c", "core.quotepath=off", "-c", "core.fsmonitor=false", "status", "--porcelain=v2", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"], { env: gitEnv() })
  return now() - t0
}

// CPU time, which a busy machine inflates far less than wall time: the children's (git, bash) from
// /proc/self/stat (cutime + cstime of waited-for children, in clock ticks), Node's own from
// process.cpuUsage(). Phases, not interleaving: the counters are process-wide.
const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
const childCpuMs = () => {
  const fields = readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /, "").split(" ")
  // After the command name: field 3 is the state; cutime and cstime are fields 16 and 17.
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

const summary = (xs) => ({ median: median(xs), p95: percentile(xs, 95) })

const measure = async (label, cwd, rounds) => {
  const floors = []
  const calls = []
  const statuses = []
  for (let i = 0; i < 3; i++) await withDiffs(cwd) // warm-up: page cache, JIT
  for (let i = 0; i < rounds; i++) {
    // Interleaved, so machine noise hits all three alike.
    floors.push(await floor(cwd))
    calls.push(await withDiffs(cwd))
    if (cwd.includes("repo-")) statuses.push(await gitStatusAlone(cwd))
  }
  const cpuFloor = await cpuPerCall(rounds, () => floor(cwd))
  const cpuCall = await cpuPerCall(rounds, () => withDiffs(cwd))
  const floorS = summary(floors)
  const before = summary(calls.map((c) => c.beforeMs))
  const after = summary(calls.map((c) => c.afterMs))
  const total = summary(calls.map((c) => c.totalMs))
  return {
    label,
    rounds,
    floor: floorS,
    before,
    after,
    total,
    gitStatus: statuses.length ? summary(statuses) : undefined,
    cpu: { floor: cpuFloor, call: cpuCall, added: cpuCall.child + cpuCall.own - cpuFloor.child - cpuFloor.own },
    addedCritical: before.median,
    addedTotal: total.median - floorS.median,
    ratioCritical: (floorS.median + before.median) / floorS.median,
    ratioTotal: total.median / floorS.median,
    ok: calls.every((c) => c.shown === 0) && calls.every((c) => c.snapshot === cwd.includes("repo-"))
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const ms = (x) => (x === undefined || !Number.isFinite(x) ? "—" : `${x.toFixed(1)} ms`)
const START = "<!-- changed-files:start -->"
const END = "<!-- changed-files:end -->"

const markdown = (results) => {
  const one = results.rows.find((r) => r.label.startsWith("git, 1,000"))
  const met = one !== undefined && one.addedTotal <= TARGET_MS
  const metCritical = one !== undefined && one.addedCritical <= TARGET_MS
  return [
    START,
    "## Changed files (issue #13)",
    "",
    "Written by `bench/changed-files.mjs` (not by `bench/run.mjs`); rerun with",
    "`npx tsc -p tsconfig.build.json && node bench/changed-files.mjs` (`--short --no-write` to print only).",
    `${results.date}, ${results.nproc} CPUs (${results.cpu}), Node ${results.node}, ${results.git}, ${results.short ? "short" : "full"} mode,` +
      ` load average ${results.load.map((l) => l.toFixed(1)).join(" → ")} (other work on the machine inflates every figure, the floor's too).`,
    "",
    "One call of `true` with the feature = snapshot (`git status --porcelain=v2 -z`, stats and copies of",
    "the dirty files) → `bash -c true` → compare (a second status). Floor: the bare `bash --noprofile --norc -c true`",
    "spawn. The repositories are generated and committed, with 3 modified and 2 untracked files, index",
    "refreshed. The snapshot before is on the call's critical path; the comparison after is not (the",
    "card's exit goes out first), but it is CPU the machine spends per call.",
    "",
    "| | floor | snapshot (before) | compare (after) | call with diffs | added, critical path | added, total | ratio (total) | `git status` alone |",
    "|---|---|---|---|---|---|---|---|---|",
    ...results.rows.map((r) =>
      `| ${r.label} | ${ms(r.floor.median)} | ${ms(r.before.median)} | ${ms(r.after.median)} | ${ms(r.total.median)} | **${ms(r.addedCritical)}** | **${ms(r.addedTotal)}** | ${r.ratioTotal.toFixed(2)}× | ${ms(r.gitStatus?.median)} |`
    ),
    "",
    `Medians of ${results.rows.map((r) => r.rounds).join(" / ")} interleaved rounds, after 3 warm-up calls each. ` +
      `p95 of the added total: ${results.rows.map((r) => `${r.label}: ${ms(r.total.p95 - r.floor.median)}`).join("; ")}.`,
    "",
    "CPU time per call (load-robust: a busy machine stretches wall time, much less CPU time), averaged over",
    "the same number of calls run back to back; child = git and bash processes, own = this Node process:",
    "",
    "| | floor CPU (child + own) | with diffs CPU (child + own) | added CPU |",
    "|---|---|---|---|",
    ...results.rows.map((r) =>
      `| ${r.label} | ${ms(r.cpu.floor.child)} + ${ms(r.cpu.floor.own)} | ${ms(r.cpu.call.child)} + ${ms(r.cpu.call.own)} | **${ms(r.cpu.added)}** |`
    ),
    "",
    `Target ≤ +${TARGET_MS} ms median at 1,000 files: before + after ${met ? "yes" : "**NO**"}; the critical path alone ${metCritical ? "yes" : "**NO**"}.`,
    "What dominates: each snapshot is one `git status` process (last column of the first table); Node's",
    "own part (parsing, `lstat` and copies of the dirty files) is the snapshot minus that: " +
      results.rows.filter((r) => r.gitStatus !== undefined).map((r) => `${r.label}: ${ms(r.before.median - r.gitStatus.median)}`).join("; ") + ".",
    "Relative to the floor (one bash spawn), which load stretches alike, the critical path adds " +
      results.rows.map((r) => `${r.label}: ${(r.addedCritical / r.floor.median).toFixed(2)}×`).join("; ") + " of a floor.",
    "Outside git nothing is spawned (a walk up the directories looking for `.git`).",
    END,
    ""
  ].join("\n")
}

const writeSection = (section) => {
  const file = join(root, "docs", "BENCHMARKS.md")
  const text = readFileSync(file, "utf8")
  const start = text.indexOf(START)
  const end = text.indexOf(END)
  const next = start >= 0 && end > start
    ? text.slice(0, start) + section + text.slice(end + END.length + 1)
    : text.replace(/\n*$/, "\n\n") + section
  writeFileSync(file, next)
}

const main = async () => {
  const parent = realpathSync(mkdtempSync(join(tmpdir(), "dsh-acp-bench-diffs-")))
  try {
    process.stderr.write("bench: generating repositories…\n")
    const small = makeRepo(parent, 1_000)
    const large = makeRepo(parent, 20_000)
    const outside = join(parent, "outside")
    mkdirSync(outside)
    await settle([small, large])
    const loadBefore = loadavg()[0]
    const rounds = short ? 10 : 40
    const rows = []
    rows.push(await measure("outside git", outside, rounds))
    rows.push(await measure("git, 1,000 files", small, rounds))
    rows.push(await measure("git, 20,000 files", large, short ? 5 : 20))
    const results = {
      date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
      nproc: availableParallelism(),
      cpu: cpus()[0]?.model ?? "unknown",
      node: process.version,
      git: execFileSync("git", ["--version"], { encoding: "utf8" }).trim(),
      short,
      load: [loadBefore, loadavg()[0]],
      rows
    }
    if (flag("--json")) process.stdout.write(JSON.stringify(results, null, 2) + "\n")
    else {
      const section = markdown(results)
      process.stdout.write(section)
      if (!flag("--no-write")) {
        writeSection(section)
        process.stderr.write("bench: wrote the changed-files section of docs/BENCHMARKS.md\n")
      }
    }
    if (!rows.every((r) => r.ok)) {
      process.stderr.write("bench: a snapshot was missing or a change was reported for `true`\n")
      process.exitCode = 1
    }
  } finally {
    rmSync(parent, { recursive: true, force: true })
  }
}

await main()
