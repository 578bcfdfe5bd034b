/**
 * Containment: the bwrap pid namespace against plain process groups. Exit codes and signals read
 * the same through bwrap, a `setsid` grandchild cannot escape the namespace, the probe falls back.
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { describe, expect, it } from "@effect/vitest"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import * as ChildProcess from "../../src/Bash/ChildProcess.js"
import { exited, signaled } from "../../src/Terminal/ExitStatus.js"
import { bwrapProblem, containmentModes, eventually, livingWith, run, token } from "./helpers.js"

const session = (mode: "bwrap" | "process-group", cwd = "/tmp") =>
  Effect.flatMap(Bash, (bash) => bash.session({ cwd })).pipe(Effect.provide(BashLive.layer({ containment: mode })))

describe("namespaceStatus", () => {
  it("128+n is a signal unless the EXIT trap recorded exactly that code", () => {
    expect(ChildProcess.namespaceStatus(0, 0)).toEqual(exited(0))
    expect(ChildProcess.namespaceStatus(143, 143)).toEqual(exited(143))
    expect(ChildProcess.namespaceStatus(143, 0)).toEqual(signaled("SIGTERM"))
    expect(ChildProcess.namespaceStatus(137, undefined)).toEqual(signaled("SIGKILL"))
    expect(ChildProcess.namespaceStatus(255, undefined)).toEqual(exited(255))
    expect(ChildProcess.namespaceStatus(2, undefined)).toEqual(exited(2))
    // Signals with two names read as Node names them (the first alias), as in process-group mode.
    expect(ChildProcess.namespaceStatus(128 + 6, undefined)).toEqual(signaled("SIGABRT"))
    expect(ChildProcess.namespaceStatus(128 + 29, undefined)).toEqual(signaled("SIGIO"))
  })
})

describe("bwrap probe", () => {
  it.live("a missing bwrap is reported as missing", () =>
    Effect.gen(function*() {
      expect((yield* ChildProcess.probeBwrap("/nonexistent/bwrap"))._tag).toBe("Missing")
    }))

  it.live.skipIf(bwrapProblem !== undefined)("the installed bwrap works (skipped when it does not)", () =>
    Effect.gen(function*() {
      expect(yield* ChildProcess.probeBwrap()).toEqual({ _tag: "Works" })
    }))

  it.live("auto falls back to process groups when bwrap cannot run, and says so", () =>
    Effect.gen(function*() {
      const path = process.env.PATH
      process.env.PATH = "/nonexistent"
      const logs: Array<string> = []
      try {
        const containment = yield* BashLive.resolveContainment("auto").pipe(
          Effect.flatten,
          Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logs.push(String(message)))))
        )
        expect(containment).toEqual(ChildProcess.processGroup)
      } finally {
        process.env.PATH = path
      }
      expect(logs.join("\n")).toContain("containment: process groups")
    }))

  it("DSH_ACP_CONTAINMENT picks the mode when the config does not", () => {
    expect(BashLive.containmentFromEnv({ DSH_ACP_CONTAINMENT: "process-group" })).toBe("process-group")
    expect(BashLive.containmentFromEnv({ DSH_ACP_CONTAINMENT: "nonsense" })).toBeUndefined()
    expect(BashLive.containmentFromEnv({})).toBeUndefined()
  })
})

for (const { mode, skip } of containmentModes) {
  describe.skipIf(skip !== undefined)(`exit statuses (${mode}${skip === undefined ? "" : `: skipped, ${skip}`})`, () => {
    it.scopedLive("codes and signals read exactly as Node reports them for a plain process", () =>
      Effect.gen(function*() {
        const s = yield* session(mode)
        const cases: ReadonlyArray<readonly [string, unknown]> = [
          ["exit 143", { _tag: "Exited", code: 143 }],
          ["exit 137", { _tag: "Exited", code: 137 }],
          ["kill -TERM $$", { _tag: "Signaled", signal: "SIGTERM" }],
          ["kill -KILL $$", { _tag: "Signaled", signal: "SIGKILL" }],
          ["kill -HUP $$", { _tag: "Signaled", signal: "SIGHUP" }],
          ["sh -c 'kill -TERM $$'", { _tag: "Exited", code: 143 }],
          ["false", { _tag: "Exited", code: 1 }]
        ]
        for (const [command, end] of cases) {
          const r = yield* run(s, { command })
          expect([command, r.parts.end]).toEqual([command, expect.objectContaining(end as object)])
          // No "Terminated" notice from anything around the command (the command's own bash prints
          // one for a child it saw die, which is the command's output).
          if (!command.startsWith("sh ")) expect([command, r.parts.output]).toEqual([command, ""])
        }
      }))

    it.scopedLive("the command sees the same user, cwd and files; stderr keeps only its own text", () =>
      Effect.gen(function*() {
        const dir = fs.realpathSync(fs.mkdtempSync("/tmp/dsh-acp-cont-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
        fs.writeFileSync(`${dir}/marker`, "seen\n")
        const s = yield* session(mode, dir)
        const r = yield* run(s, { command: "id -u; pwd; cat marker; echo \"PWD=$PWD\"; echo done >&2" })
        expect(r.parts.output).toBe(`${process.getuid!()}\n${dir}\nseen\nPWD=${dir}\ndone\n`)
      }))

    it.scopedLive(
      mode === "bwrap"
        ? "a setsid grandchild is killed when the command ends"
        : "a setsid grandchild escapes the process group (the known limit of this mode)",
      () =>
        Effect.gen(function*() {
          const s = yield* session(mode)
          const tok = token()
          yield* Effect.addFinalizer(() => Effect.sync(() => livingWith(tok).forEach((pid) => process.kill(pid, "SIGKILL"))))
          const r = yield* run(s, { command: `setsid sleep 100.${tok} > /dev/null 2>&1 & sleep 0.2; echo ok` })
          expect(r.parts.output).toBe("ok\n")
          if (mode === "bwrap") {
            expect(r.parts.backgroundJobsKilled).toBe(1)
            yield* eventually(() => (livingWith(tok).length === 0 ? true : undefined))
          } else {
            yield* Effect.sleep("200 millis")
            expect(livingWith(tok).length).toBe(1)
          }
        })
    )
  })
}
