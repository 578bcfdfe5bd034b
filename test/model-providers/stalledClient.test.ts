/**
 * Backpressure in model mode (issue #11): a model floods 256 MiB through a Bash call while the
 * client stops reading the agent's stdout for 10 s. With bounded queues from the pipe to stdout the
 * command is stalled with the client and the agent's memory does not follow the flood; before, the
 * whole flood piled up in the model turn's queue (a 635 MB peak for this 256 MiB flood).
 *
 * Asserted on memory, never on time: the agent's own growth (VmHWM against its RSS before the
 * prompt), during the stall and overall, stays well below the flood's size. Runs `bench/flow.mjs`,
 * which reports the same figures (`node bench/flow.mjs` for the 1 GiB version).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const FLOOD = 256 * 1024 * 1024

const runRound = Effect.async<string, Error>((resume) => {
  const child = execFile(
    process.execPath,
    ["bench/flow.mjs", "--json", "--no-reference", "--bytes", String(FLOOD), "--stall-ms", "10000", "--rounds", "1"],
    { cwd: root, timeout: 150_000 },
    (error, stdout, stderr) => resume(error ? Effect.fail(new Error(`${error.message}\n${stderr}`)) : Effect.succeed(stdout))
  )
  return Effect.sync(() => child.kill())
})

describe("model mode, a client that stops reading", () => {
  it.live("a 256 MiB flood: the agent's memory grows by far less than the flood, during the stall and after", () =>
    Effect.gen(function*() {
      const result = JSON.parse(yield* runRound)
      // The turn ended normally, the card got its exit and the model's answer reached the client.
      expect(result.ok).toBe(true)
      const growthDuringStall = result.stallPeaks[0] - result.baseRss
      const growth = result.peakRss - result.baseRss
      expect(growthDuringStall).toBeLessThan(FLOOD / 2)
      expect(growth).toBeLessThan(FLOOD / 2)
      // The card showed at most its display budget (2 MiB) plus framing.
      expect(result.maxClientBytes).toBeLessThan(3 * 1024 * 1024)
    }), 180_000)
})
