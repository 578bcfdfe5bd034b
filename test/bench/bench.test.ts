/**
 * Runs the benchmarks at CI size (`bench/run.mjs --short`) so CI exercises them against the real
 * bundled command. Asserts only correctness — every result right, the client's bytes bounded by the
 * display budget, every figure a finite number — never a timing threshold: timing is the bench's
 * report, and a loaded CI machine must not fail the build.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile, execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const DISPLAY_BUDGET = 2 * 1024 * 1024

const runBench = Effect.async<string, Error>((resume) => {
  const child = execFile(
    process.execPath,
    ["bench/run.mjs", "--short", "--no-write", "--json"],
    { cwd: root, maxBuffer: 16 * 1024 * 1024, timeout: 150_000 },
    (error, stdout, stderr) => resume(error ? Effect.fail(new Error(`${error.message}\n${stderr}`)) : Effect.succeed(stdout))
  )
  return Effect.sync(() => child.kill())
})

const finite = (label: string, value: unknown) => expect(Number.isFinite(value), `${label} = ${String(value)}`).toBe(true)

describe("bench/run.mjs --short", () => {
  it.live("measures every benchmark with correct results and bounded client bytes", () =>
    Effect.gen(function*() {
      // `npm test` builds first; a bare `vitest run` on a fresh checkout needs the bundle too.
      if (!existsSync(`${root}/dist/bin.js`)) execFileSync(process.execPath, ["scripts/bundle.mjs"], { cwd: root })
      const results = JSON.parse(yield* runBench)

      expect(results.machine.nproc).toBeGreaterThan(0)

      const { cold, call, live, flood, concurrency } = results
      expect(cold.ok).toBe(true)
      expect(cold.agentMs).toHaveLength(cold.rounds)
      for (const key of ["agentMedian", "floorMedian", "ratio", "noProbeMedian"]) finite(`cold.${key}`, cold[key])

      expect(call.ok).toBe(true)
      // Default (full), process groups, and the workspace and read-only sandbox profiles.
      expect(call.modes).toHaveLength(4)
      for (const mode of call.modes) for (const key of ["median", "p95", "overhead"]) finite(`call ${mode.label} ${key}`, mode[key])
      for (const key of ["agentMedian", "floorMedian", "agentP95", "floorP95", "overhead"]) finite(`call.${key}`, call[key])

      // Every stamped line came through the agent, in time order or not.
      expect(live.ok).toBe(true)
      expect(live.lines).toBe(live.rounds * 20)
      for (const key of ["agentMedian", "agentP95", "floorMedian", "floorP95"]) finite(`live.${key}`, live[key])

      // 64 MiB through the agent: the client gets the display budget's worth, not the flood.
      expect(flood.ok).toBe(true)
      expect(flood.bytes).toBe(64 * 1024 * 1024)
      expect(flood.bounded).toBe(true)
      expect(flood.shownBytes).toBeGreaterThan(DISPLAY_BUDGET / 2)
      expect(flood.shownBytes).toBeLessThanOrEqual(DISPLAY_BUDGET + 200)
      expect(flood.clientBytes).toBeLessThan(4 * DISPLAY_BUDGET)
      for (const key of ["agentMedian", "floorMedian", "ratio", "peakRss"]) finite(`flood.${key}`, flood[key])

      // 20 sessions × 10 commands: each output and each card's cwd checked by the bench.
      expect(concurrency.errors).toEqual([])
      expect(concurrency.ok).toBe(true)
      expect(concurrency.calls).toBe(200)
      expect(concurrency.modes.map((m: { calls: number }) => m.calls)).toEqual([200, 200])
      for (const key of ["agentP50", "agentP99", "floorP50", "floorP99"]) finite(`concurrency.${key}`, concurrency[key])
    }), 180_000)
})
