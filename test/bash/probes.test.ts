/**
 * The `auto` probes: one bwrap run answers both questions (does the pid namespace work, do the
 * sandbox profiles) where the sandbox's strict view runs; where it does not, the plain namespace is
 * probed and the sandbox's answer is still the strict run's. Counted through a `bwrap` on PATH
 * that logs each run before it runs the real one (or refuses network namespaces, as some
 * containers do).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "@effect/vitest"
import * as ChildProcess from "../../src/Bash/ChildProcess.js"
import * as Containment from "../../src/Bash/Containment.js"
import { sandboxProblem } from "./helpers.js"

const realBwrap = (process.env.PATH ?? "").split(":").map((dir) => path.join(dir, "bwrap")).find((file) => fs.existsSync(file))

/** A directory holding a `bwrap` that appends its arguments to `runs` and then does `body`. */
const fakeBwrap = (body: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dsh-acp-probe-test-"))
  const runs = path.join(dir, "runs")
  fs.writeFileSync(path.join(dir, "bwrap"), `#!/bin/sh\necho "$*" >> ${runs}\n${body}\n`, { mode: 0o755 })
  return { dir, runs: () => (fs.existsSync(runs) ? fs.readFileSync(runs, "utf8").trim().split("\n") : []) }
}

describe.skipIf(sandboxProblem !== undefined || realBwrap === undefined)(
  `auto probes${sandboxProblem === undefined ? "" : ` (skipped: ${sandboxProblem})`}`,
  () => {
    it.live("one bwrap run gives the pid namespace and the sandbox profiles", () =>
      Effect.gen(function*() {
        const fake = fakeBwrap(`exec ${realBwrap} "$@"`)
        const { containment, sandbox } = yield* withPath(fake.dir, both())
        expect(containment).toEqual({ _tag: "PidNamespace", bwrap: "bwrap" })
        expect(sandbox).toEqual({ _tag: "Available" })
        expect(fake.runs()).toHaveLength(1)
        expect(fake.runs()[0]).toContain("--unshare-net")
      }))

    it.live("where network namespaces are refused: the pid namespace still, the sandbox not, said why", () =>
      Effect.gen(function*() {
        const fake = fakeBwrap(`case "$*" in *--unshare-net*) echo "bwrap: no netns here" >&2; exit 1;; esac\nexec ${realBwrap} "$@"`)
        const { containment, sandbox } = yield* withPath(fake.dir, both())
        expect(containment).toEqual({ _tag: "PidNamespace", bwrap: "bwrap" })
        expect(sandbox._tag).toBe("Unavailable")
        expect(sandbox._tag === "Unavailable" ? sandbox.reason : "").toContain("no netns here")
        expect(fake.runs()).toHaveLength(2)
      }))

    it.live("a tool directory other than the one probed is probed again", () =>
      Effect.gen(function*() {
        const fake = fakeBwrap(`exec ${realBwrap} "$@"`)
        const other = fs.mkdtempSync(path.join(os.tmpdir(), "dsh-acp-probe-dir-"))
        const { sandbox } = yield* withPath(fake.dir, both(other))
        expect(sandbox).toEqual({ _tag: "Available" })
        expect(fake.runs()).toHaveLength(2)
        expect(fake.runs()[1]).toContain(fs.realpathSync(other))
      }))
  }
)

describe("probes", () => {
  it.live("process groups configured: the sandbox is unavailable, and no bwrap runs to say so", () =>
    Effect.gen(function*() {
      const fake = fakeBwrap("exit 1")
      const sandbox = yield* withPath(
        fake.dir,
        Effect.flatMap(Containment.resolveContainment("process-group"), (c) => Effect.flatten(Containment.resolveSandbox(c, os.tmpdir())))
      )
      expect(sandbox._tag).toBe("Unavailable")
      expect(fake.runs()).toEqual([])
    }))

  it.live("no bwrap at all: process groups, and the sandbox unavailable", () =>
    Effect.gen(function*() {
      const empty = fs.mkdtempSync(path.join(os.tmpdir(), "dsh-acp-probe-none-"))
      const saved = process.env.PATH
      process.env.PATH = empty
      try {
        const containmentOf = yield* Containment.resolveContainment("auto")
        const sandbox = yield* Effect.flatten(Containment.resolveSandbox(containmentOf, os.tmpdir()))
        expect(yield* containmentOf).toEqual(ChildProcess.processGroup)
        expect(sandbox._tag).toBe("Unavailable")
      } finally {
        process.env.PATH = saved
      }
    }))
})

/** `effect` run with `dir` first on PATH (the probes look `bwrap` up by name). */
function withPath<A>(dir: string, effect: Effect.Effect<A>): Effect.Effect<A> {
  return Effect.acquireUseRelease(
    Effect.sync(() => {
      const saved = process.env.PATH
      process.env.PATH = `${dir}:${saved}`
      return saved
    }),
    () => effect,
    (saved) => Effect.sync(() => void (process.env.PATH = saved))
  )
}

/** Both answers, the sandbox's awaited first (as `session/new`'s modes do). */
function both(tempDir = os.tmpdir()) {
  return Effect.gen(function*() {
    const containmentOf = yield* Containment.resolveContainment("auto")
    const sandbox = yield* Effect.flatten(Containment.resolveSandbox(containmentOf, tempDir))
    return { sandbox, containment: yield* containmentOf }
  })
}
