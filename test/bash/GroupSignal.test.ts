/**
 * GroupSignal: a real process group, signalled while it lives and after it is gone; and the call's
 * record files (cwd) are removed once the call's scope closes, however the call ended.
 */
import * as cp from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "@effect/vitest"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import { signalGroup } from "../../src/Bash/GroupSignal.js"
import { containmentModes, run } from "./helpers.js"

const exitOf = (child: cp.ChildProcess) =>
  new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)))

describe("signalGroup", () => {
  it("reaches a live group, says false once it is gone, and leaves the stack trace limit as it was", async () => {
    const child = cp.spawn("sleep", ["30"], { detached: true, stdio: "ignore" })
    const exit = exitOf(child)
    const limit = Error.stackTraceLimit
    expect(signalGroup(child.pid!, 0)).toBe(true)
    expect(signalGroup(child.pid!, "SIGTERM")).toBe(true)
    expect(await exit).toBe("SIGTERM")
    expect(signalGroup(child.pid!, 0)).toBe(false)
    expect(signalGroup(child.pid!, "SIGKILL")).toBe(false)
    expect(Error.stackTraceLimit).toBe(limit)
  })
})

const recordsIn = (dir: string) => fs.readdirSync(dir).filter((f) => f.startsWith("dsh-acp-cwd-") || f.startsWith("dsh-acp-exit-"))

for (const { mode, skip } of containmentModes) {
  describe(`call records (${mode})`, () => {
    const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), "records-"))
    it.live.skipIf(skip !== undefined)("a call's cwd and exit records are gone once it ended, however it ended; a `cd` still persists", () =>
      Effect.gen(function*() {
        const bash = yield* Bash
        const session = yield* bash.session({ cwd: "/tmp" })
        // The records live in the session's own directory, the one directory made in `tempDir`.
        const [own] = fs.readdirSync(tempDir)
        const dir = `${tempDir}/${own}`
        for (const command of ["cd /", "true", "exit 3", "kill -TERM $$", "sleep 0.05 & true"]) {
          yield* run(session, { command })
          expect(recordsIn(dir)).toEqual([])
        }
        expect(yield* session.cwd).toBe("/")
      }).pipe(Effect.scoped, Effect.provide(BashLive.layer({ containment: mode, tempDir }))))
  })
}
