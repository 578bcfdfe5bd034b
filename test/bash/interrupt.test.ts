/**
 * What an interrupted call leaves behind: its full-output file and that file's descriptor must go
 * with it, whichever way the call is stopped (the consumer goes away, the agent shuts down).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { describe, expect, it } from "@effect/vitest"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import { containmentModes, eventually, livingWith, token } from "./helpers.js"

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
              filesWhileRunning = fs.readdirSync(tempDir).filter((f) => f.startsWith("dsh-acp-output-")).length
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
        expect(livingWith(tok)).toEqual([])
        expect(fs.readdirSync(tempDir).filter((f) => f.startsWith("dsh-acp-output-"))).toEqual([])
        expect(outputFds()).toEqual([])
        // Pipes and the file are closed synchronously by the finalizers; allow a moment for Node's
        // own handles (the child's pipe sockets) to be released.
        yield* eventually(() => openFds().length <= fdsBefore ? true : undefined, 3000)
        fs.rmSync(tempDir, { recursive: true, force: true })
      }), 20_000)
  })
}
