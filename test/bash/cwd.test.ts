/** The session cwd through a user's own EXIT trap, a final `exec`, and concurrent calls (issue #11). */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { describe, expect, it } from "@effect/vitest"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import { containmentModes, run } from "./helpers.js"

const usr = fs.realpathSync("/usr")
const etc = fs.realpathSync("/etc")

for (const { mode, skip } of containmentModes) {
  const session = (cwd = "/") =>
    Effect.flatMap(Bash, (bash) => bash.session({ cwd })).pipe(Effect.provide(BashLive.layer({ containment: mode })))

  describe.skipIf(skip !== undefined)(`session cwd (${mode}${skip === undefined ? "" : `: skipped, ${skip}`})`, () => {
    it.scopedLive("a cd survives the user's own EXIT trap, which still runs and sees the real status", () =>
      Effect.gen(function*() {
        const s = yield* session()
        const r = yield* run(s, { command: `cd /usr; trap 'echo "bye $?"' EXIT; exit 3` })
        expect(r.parts.output).toBe("bye 3\n")
        expect(r.parts.end).toMatchObject({ code: 3 })
        expect(yield* s.cwd).toBe(usr)
        // Two traps in a row: the last one runs (as in bash), and the record still happens.
        const r2 = yield* run(s, { command: `trap 'echo a' EXIT; trap 'echo b' EXIT; cd /etc` })
        expect(r2.parts.output).toBe("b\n")
        expect(yield* s.cwd).toBe(etc)
        // Reset by the user: the record still happens.
        yield* run(s, { command: `trap - EXIT; cd /usr` })
        expect(yield* s.cwd).toBe(usr)
        // A subshell's trap is the subshell's own.
        const r3 = yield* run(s, { command: `(trap 'echo sub' EXIT; cd /etc); pwd` })
        expect(r3.parts.output).toBe(`sub\n${usr}\n`)
        expect(yield* s.cwd).toBe(usr)
      }))

    it.scopedLive("a cd survives a final exec; exec with redirections only keeps them", () =>
      Effect.gen(function*() {
        const s = yield* session()
        const r = yield* run(s, { command: `cd /usr; exec echo replaced` })
        expect(r.parts.output).toBe("replaced\n")
        expect(r.parts.end).toMatchObject({ code: 0 })
        expect(yield* s.cwd).toBe(usr)
        // `exec >file` redirects the rest of the script (an alias, not a function, keeps that).
        const r2 = yield* run(s, { command: `cd /etc; exec >/dev/null; echo hidden` })
        expect(r2.parts.output).toBe("")
        expect(yield* s.cwd).toBe(etc)
        // One simple command: `false && exec …` does not exec.
        const r3 = yield* run(s, { command: `cd /usr && false && exec echo no || echo yes` })
        expect(r3.parts.output).toBe("yes\n")
        expect(yield* s.cwd).toBe(usr)
        // An exec inside a subshell does not move the session.
        yield* run(s, { command: `(cd /etc; exec true); true` })
        expect(yield* s.cwd).toBe(usr)
        // Nothing of ours reaches the exec'd program's environment.
        const r4 = yield* run(s, { command: `exec env` })
        expect(r4.parts.output).not.toMatch(/dsh_acp|BASH_ENV/)
      }))

    it.scopedLive("concurrent calls each start from the cwd at their start; one that did not cd moves nothing", () =>
      Effect.gen(function*() {
        const s = yield* session()
        // The first to finish moves the session; the slower one, which never cd'd, leaves it there.
        const slow = yield* Effect.fork(run(s, { command: "sleep 0.6; pwd" }))
        const fast = yield* run(s, { command: "cd /usr; sleep 0.1" })
        expect(fast.parts.end).toMatchObject({ code: 0 })
        expect(yield* s.cwd).toBe(usr)
        const r = yield* Fiber.join(slow)
        expect(r.parts.output).toBe("/\n")
        expect(yield* s.cwd).toBe(usr)
      }))
  })
}
