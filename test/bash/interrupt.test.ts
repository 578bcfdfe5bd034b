/**
 * What an interrupted call leaves behind: its full-output file and that file's descriptor must go
 * with it, whichever way the call is stopped (the consumer goes away, the agent shuts down).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import { describe, expect, it } from "@effect/vitest"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import { containmentModes, eventually, survivorsOf, token } from "./helpers.js"

const openFds = (): Array<string> => fs.readdirSync("/proc/self/fd")
/** Descriptors of ours that point at a full-output file (by name, so unrelated fds cannot interfere). */
const outputFds = (): Array<string> =>
  openFds().flatMap((fd) => {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`)
      return target.includes("dsh-acp-output-") ? [target] : []
    } catch {
      return []
    }
  })

/** Full-output files under `dir` (each session keeps its files in a directory of its own there). */
const outputFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => path.basename(f).startsWith("dsh-acp-output-"))

for (const { mode, skip } of containmentModes) {
  describe.skipIf(skip !== undefined)(`interrupted calls (${mode}${skip === undefined ? "" : `: skipped, ${skip}`})`, () => {
    it.live("interrupting a call past the spill threshold removes its full-output file and closes its fd", () =>
      Effect.gen(function*() {
        const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), "dsh-acp-interrupt-"))
        const fdsBefore = openFds().length
        const tok = token()
        yield* Effect.scoped(Effect.gen(function*() {
          const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: mode, tempDir }))
          const s = yield* bash.session({ cwd: "/tmp" })
          let seen = 0
          let filesWhileRunning = 0
          let fdsWhileRunning = 0
          // Consume until 3 MB went by (the file is open by then), then stop: the stream's scope closes mid-call.
          yield* s.run({ command: `head -c 3000000 /dev/zero | tr '\\0' a; sleep 100.${tok}` }).pipe(
            Stream.takeUntil((e) => {
              if (e._tag === "Output") seen += e.data.length
              if (seen < 3_000_000) return false
              filesWhileRunning = outputFiles(tempDir).length
              fdsWhileRunning = outputFds().length
              return true
            }),
            Stream.runDrain
          )
          expect(seen).toBeGreaterThanOrEqual(3_000_000)
          // The file really was opened while the call ran (else the test would prove nothing).
          expect(filesWhileRunning).toBe(1)
          expect(fdsWhileRunning).toBe(1)
        }))
        expect(yield* survivorsOf(tok)).toEqual([])
        expect(outputFiles(tempDir)).toEqual([])
        expect(outputFds()).toEqual([])
        // Pipes and the file are closed synchronously by the finalizers; allow a moment for Node's
        // own handles (the child's pipe sockets) to be released.
        yield* eventually(() => openFds().length <= fdsBefore ? true : undefined, 3000)
        fs.rmSync(tempDir, { recursive: true, force: true })
      }), 20_000)

    // The fiber that waits for the exit and renders the result can die (here: a `timeout_ms` that is
    // not an integer passes the executor's types but not the result's Schema, so rendering throws).
    // The stream must end with an error instead of waiting forever for a `Finished`.
    it.live("a failure while rendering the result fails the stream instead of hanging it, and nothing is left running", () =>
      Effect.gen(function*() {
        const tok = token()
        const outcome = yield* Effect.scoped(Effect.gen(function*() {
          const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: mode }))
          const s = yield* bash.session({ cwd: "/tmp" })
          return yield* s.run({ command: `echo hi; sleep 100.${tok} & sleep 100.${tok}`, timeout_ms: 200.5 }).pipe(
            Stream.runCollect,
            Effect.either,
            Effect.timeout("15 seconds")
          )
        }))
        expect(Either.isLeft(outcome)).toBe(true)
        if (Either.isLeft(outcome)) {
          expect(outcome.left._tag).toBe("BashError")
          expect(outcome.left.reason).toBe("Internal")
        } else {
          expect.fail(`the stream ended normally: ${JSON.stringify(Chunk.toArray(outcome.right))}`)
        }
        expect(yield* survivorsOf(tok)).toEqual([])
      }), 30_000)

    it.live("a failure while rendering a background task's result still ends its events and its task", () =>
      Effect.gen(function*() {
        const tok = token()
        yield* Effect.scoped(Effect.gen(function*() {
          const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: mode }))
          const s = yield* bash.session({ cwd: "/tmp" })
          const task = yield* s.start({ command: `sleep 100.${tok}`, timeout_ms: 200.5, run_in_background: true })
          const events = Chunk.toArray(yield* task.events.pipe(Stream.runCollect, Effect.timeout("15 seconds")))
          const last = events.at(-1)
          expect(last?._tag).toBe("Finished")
          if (last?._tag === "Finished") expect(last.result.text).toContain("the executor failed")
          const [info] = yield* s.list
          expect(info?.result?.text).toContain("the executor failed")
        }))
        expect(yield* survivorsOf(tok)).toEqual([])
      }), 30_000)
  })
}
