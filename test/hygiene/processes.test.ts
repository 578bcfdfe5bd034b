/**
 * Process hygiene of the real agent (`node dist/bin.js` over stdio): after a timeout, a cancel, a
 * session/close, stdin EOF or SIGTERM, no process a command started survives — in both
 * containment modes. In the bwrap mode also a `setsid` grandchild and an agent killed by SIGKILL
 * leave nothing behind; in the process-group mode the SIGKILL case is the known limit, shown here.
 * Processes are found by a unique token in their argv (`sleep 100.<token>`), walking /proc.
 */
import { describe, expect, it } from "@effect/vitest"
import { cardsOf } from "../support/agentProcess.js"
import { gone, killAll, modes, rpc, running, sleepers, startAgent, token, withDir } from "./support.js"

for (const { mode, skip } of modes) {
  describe.skipIf(skip !== undefined).concurrent(`no command process survives (${mode}${skip === undefined ? "" : `: skipped, ${skip}`})`, () => {
    it("the agent logs which containment is active", () =>
      withDir(async (dir) => {
        const agent = startAgent(mode)
        const r = rpc(agent)
        await r.initialize()
        const s = await r.newSession(dir)
        await r.prompt(s, "true")
        await agent.stop()
        expect(agent.stderrLines.join("\n")).toContain(mode === "bwrap" ? "containment: bwrap pid namespace" : "containment: process groups")
      }))

    it("a timeout (--timeout-ms 500) kills `sleep 100`", () =>
      withDir(async (dir) => {
        const tok = token()
        const agent = startAgent(mode, ["--timeout-ms", "500"])
        try {
          const r = rpc(agent)
          await r.initialize()
          const s = await r.newSession(dir)
          const answer = await r.prompt(s, `sleep 100.${tok}`)
          expect(answer.result).toEqual({ stopReason: "end_turn" })
          const final = agent.stdoutLines.map((l) => JSON.parse(l)).find((m) => m.params?.update?.rawOutput !== undefined)
          expect(final?.params.update.rawOutput).toMatchObject({ timed_out: true, timed_out_after_ms: 500 })
          expect(await gone(tok)).toEqual([])
        } finally {
          await agent.stop()
          killAll(tok)
        }
      }))

    it("session/cancel during `sleep 100` kills it and the turn ends cancelled", () =>
      withDir(async (dir) => {
        const tok = token()
        const agent = startAgent(mode)
        try {
          const r = rpc(agent)
          await r.initialize()
          const s = await r.newSession(dir)
          const answer = r.prompt(s, `sleep 100.${tok}`)
          await running(tok)
          r.notify("session/cancel", { sessionId: s })
          expect((await answer).result).toEqual({ stopReason: "cancelled" })
          expect(await gone(tok)).toEqual([])
        } finally {
          await agent.stop()
          killAll(tok)
        }
      }))

    it("session/close kills a `/bg sleep 100` task and closes its card", () =>
      withDir(async (dir) => {
        const tok = token()
        const agent = startAgent(mode)
        try {
          const r = rpc(agent)
          await r.initialize()
          const s = await r.newSession(dir)
          expect((await r.prompt(s, `/bg sleep 100.${tok}`)).result).toEqual({ stopReason: "end_turn" })
          await running(tok)
          expect((await r.call("session/close", { sessionId: s })).result).toEqual({})
          expect(await gone(tok)).toEqual([])
          const cards = cardsOf(agent.stdoutLines.map((l) => JSON.parse(l)).filter((m) => m.method === "session/update").map((m) => m.params))
          expect(cards).toHaveLength(1)
          expect(cards[0]!.final?.status).toBeDefined()
        } finally {
          await agent.stop()
          killAll(tok)
        }
      }))

    for (const ending of ["stdin EOF", "SIGTERM"] as const) {
      it(`${ending} to the agent while a foreground and a /bg command run`, () =>
        withDir(async (dir) => {
          const tok = token()
          const agent = startAgent(mode)
          try {
            const r = rpc(agent)
            await r.initialize()
            const s1 = await r.newSession(dir)
            const s2 = await r.newSession(dir)
            await r.prompt(s2, `/bg sleep 100.${tok}`)
            r.prompt(s1, `sleep 100.${tok}`).catch(() => {})
            await running(tok, 2)
            if (ending === "SIGTERM") agent.signal("SIGTERM")
            else agent.endStdin()
            const exit = await agent.exited
            expect(exit.code ?? exit.signal).toBe(0)
            expect(await gone(tok)).toEqual([])
          } finally {
            await agent.stop()
            killAll(tok)
          }
        }))
    }

    if (mode === "bwrap") {
      it("a `setsid` grandchild is gone once its command ends", () =>
        withDir(async (dir) => {
          const tok = token()
          const agent = startAgent(mode)
          try {
            const r = rpc(agent)
            await r.initialize()
            const s = await r.newSession(dir)
            const answer = await r.prompt(s, `setsid sleep 100.${tok} >/dev/null 2>&1 & sleep 0.2; echo started`)
            expect(answer.result).toEqual({ stopReason: "end_turn" })
            expect(await gone(tok)).toEqual([])
          } finally {
            await agent.stop()
            killAll(tok)
          }
        }))
    }

    it(
      mode === "bwrap"
        ? "SIGKILL to the agent: nothing a command started survives (--die-with-parent)"
        : "SIGKILL to the agent: commands survive it (the known limit of process groups)",
      () =>
        withDir(async (dir) => {
          const tok = token()
          const agent = startAgent(mode)
          try {
            const r = rpc(agent)
            await r.initialize()
            const s1 = await r.newSession(dir)
            const s2 = await r.newSession(dir)
            await r.prompt(s2, `/bg sleep 100.${tok}`)
            r.prompt(s1, `setsid sleep 100.${tok} & sleep 100.${tok}`).catch(() => {})
            await running(tok, 3)
            agent.signal("SIGKILL")
            await agent.exited
            if (mode === "bwrap") {
              expect(await gone(tok)).toEqual([])
            } else {
              await new Promise((resolve) => setTimeout(resolve, 300))
              // Nobody is left to kill the groups: both sleeps, the setsid one and the /bg task live on.
              expect(sleepers(tok)).toHaveLength(3)
            }
          } finally {
            killAll(tok)
          }
        })
    )
  })
}
