/**
 * Secrets in the agent's own environment never reach a command: `env` run in the foreground and
 * as a `/bg` task (its output read from its card's updates) shows none of them, in both modes.
 */
import { describe, expect, it } from "@effect/vitest"
import { cardsOf } from "../support/agentProcess.js"
import { modes, rpc, startAgent, withDir } from "./support.js"

const secrets: Record<string, string> = {
  OPENAI_API_KEY: `sk-test${"Q7x".repeat(12)}`,
  GITHUB_TOKEN: `ghp_${"Zk9".repeat(12)}`,
  // An innocent name: caught by its value.
  BUILD_NOTES: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
}

for (const { mode, skip } of modes) {
  describe.skipIf(skip !== undefined)(`secrets (${mode}${skip === undefined ? "" : `: skipped, ${skip}`})`, () => {
    it("`env` in the foreground and as a /bg task shows none of the agent's secrets", () =>
      withDir(async (dir) => {
        const agent = startAgent(mode, [], { ...secrets, HYGIENE_PLAIN: "visible-value" })
        try {
          const r = rpc(agent)
          await r.initialize()
          const s = await r.newSession(dir)
          await r.prompt(s, "env")
          await r.prompt(s, "/bg env; echo BG-DONE")
          // The /bg card ends on its own, after the prompt's answer.
          await agent.waitForMessage(() => agent.stdoutLines.filter((l) => l.includes("\"terminal_exit\"")).length >= 2)
          const updates = agent.stdoutLines.map((l) => JSON.parse(l)).filter((m) => m.method === "session/update").map((m) => m.params)
          const cards = cardsOf(updates)
          expect(cards).toHaveLength(2)
          const [fg, bg] = cards
          // Both ran `env` for real: a plain variable of the agent is there.
          expect(fg!.output).toContain("HYGIENE_PLAIN=visible-value")
          expect(bg!.output).toContain("HYGIENE_PLAIN=visible-value")
          expect(bg!.output).toContain("BG-DONE")
          // Nowhere on the wire: not in the cards' live output, nor in their results.
          const wire = agent.stdoutLines.join("\n")
          for (const [name, value] of Object.entries(secrets)) {
            expect(wire).not.toContain(`${name}=`)
            expect(wire).not.toContain(value.split("\n")[0])
            expect(wire).not.toContain(value.split("\n")[1])
          }
        } finally {
          await agent.stop()
        }
      }))
  })
}
