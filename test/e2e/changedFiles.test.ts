/**
 * The files a command changed, on the wire: the real agent over stdio in a temporary git
 * repository, as Zed (terminal cards) and as a client without them (the console fallback). The
 * card's exit goes out first; the diffs follow in a later update that keeps the card's content.
 * Every line is validated against the official schema and the card replays as Zed shows it.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentProcess, cardsOf, connectClient, eventually, type Json, protocolViolations, spawnAgent } from "../support/agentProcess.js"
import { replayLikeZed } from "../support/zedReplay.js"

const forms: ReadonlyArray<{ readonly form: string; readonly capabilities: acp.ClientCapabilities }> = [
  { form: "card", capabilities: { _meta: { terminal_output: true } } },
  { form: "fallback", capabilities: {} }
]

const agents: Array<AgentProcess> = []
afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()))
})

const git = (cwd: string, ...args: Array<string>) => execFileSync("git", args, { cwd, stdio: "pipe" })

const makeRepo = () => {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "dsh-diffs-e2e-")))
  git(cwd, "init", "-q")
  git(cwd, "config", "user.email", "t@example.com")
  git(cwd, "config", "user.name", "T")
  writeFileSync(join(cwd, "tracked.txt"), "a\n")
  writeFileSync(join(cwd, "dirty.txt"), "one\n")
  git(cwd, "add", ".")
  git(cwd, "commit", "-qm", "init")
  writeFileSync(join(cwd, "dirty.txt"), "one\ntwo\n") // dirty before any command
  return cwd
}

describe.each(forms)("changed files over stdio ($form)", ({ form, capabilities }) => {
  it("diffs of what each command changed, after its exit, the card intact", async () => {
    // A generous budget: a loaded CI machine must not turn the feature off mid-test.
    const agent = spawnAgent([], { DSH_ACP_DIFFS_BUDGET_MS: "20000" })
    agents.push(agent)
    const client = await connectClient(agent, capabilities)
    const cwd = makeRepo()
    const sessionId = await client.newSession(cwd)
    const all: Array<Json> = []

    /** Runs one prompt; the content its card ends with (after any changed-files update). */
    const run = async (command: string) => {
      const { updates } = await client.prompt(sessionId, command)
      all.push(...updates)
      const [card] = cardsOf(updates)
      const exitAt = card!.updates.indexOf(card!.final)
      const after = card!.updates.slice(exitAt + 1)
      expect(after.length).toBeLessThanOrEqual(1)
      const last = after[0] ?? card!.final
      const diffs = (last.content as Array<Json>).filter((c) => c.type === "diff")
      const notes = (last.content as Array<Json>).filter((c) => c.type === "content").map((c) => c.content.text)
      if (after[0] !== undefined) {
        // The later update re-sends the card's content first (content replaces the list).
        expect(after[0].content.slice(0, card!.final.content.length)).toEqual(card!.final.content)
        expect(after[0].status).toBeUndefined()
        expect(after[0].locations.map((l: Json) => l.path)).toEqual(expect.arrayContaining(diffs.map((d) => d.path)))
      }
      return { card: card!, diffs, notes, after: after[0] }
    }

    const appended = await run("printf 'b\\n' >> tracked.txt")
    expect(appended.diffs).toEqual([{ type: "diff", path: join(cwd, "tracked.txt"), oldText: "a\n", newText: "a\nb\n" }])

    const created = await run("echo x > new.txt")
    expect(created.diffs).toEqual([{ type: "diff", path: join(cwd, "new.txt"), oldText: null, newText: "x\n" }])

    const removed = await run("rm tracked.txt")
    expect(removed.diffs).toEqual([{ type: "diff", path: join(cwd, "tracked.txt"), oldText: "a\nb\n", newText: "" }])

    const edited = await run("sed -i 's/two/TWO/' dirty.txt")
    expect(edited.diffs).toEqual([{ type: "diff", path: join(cwd, "dirty.txt"), oldText: "one\ntwo\n", newText: "one\nTWO\n" }])
    expect(readFileSync(join(cwd, "dirty.txt"), "utf8")).toBe("one\nTWO\n")

    const nothing = await run("true")
    expect(nothing.after).toBeUndefined()

    const many = await run("mkdir -p many && for i in $(seq -w 1 25); do echo $i > many/f$i.txt; done")
    expect(many.diffs).toHaveLength(20)
    expect(many.notes).toContain("and 5 more files changed")

    const replay = replayLikeZed(all.filter((u) => u.sessionUpdate !== "available_commands_update").map((update) => ({ update })))
    expect(replay.problems).toEqual([])
    if (form === "card") {
      const terminal = replay.cards.get(appended.card.toolCallId)!.terminal!
      expect(terminal).toMatchObject({ cwd, exit: { exit_code: 0, signal: null } })
      // The card keeps its terminal block, first, after the diffs were added.
      expect(replay.cards.get(appended.card.toolCallId)!.content[0]).toEqual({ type: "terminal", terminalId: appended.card.toolCallId })
    } else {
      expect(replay.terminals.size).toBe(0)
      expect(replay.cards.get(appended.card.toolCallId)!.content[0].content.text).toBe("```console\n[exit code: 0]\n```")
    }
    expect(protocolViolations(agent, client)).toEqual([])
  })
})

describe("changed files switched off", () => {
  it("--no-diffs: no changed-files update", async () => {
    const agent = spawnAgent(["--no-diffs"])
    agents.push(agent)
    const client = await connectClient(agent, { _meta: { terminal_output: true } })
    const cwd = makeRepo()
    const sessionId = await client.newSession(cwd)
    const { updates } = await client.prompt(sessionId, "echo x > new.txt")
    const [card] = cardsOf(updates)
    expect(card!.updates.at(-1)).toBe(card!.final)
    expect(JSON.stringify(updates)).not.toContain("\"diff\"")
    expect(protocolViolations(agent, client)).toEqual([])
  })
})

describe.each(["full", "workspace"])("changed files with the work-tree watcher armed (--sandbox %s)", (sandbox) => {
  it("an edit saved just before a prompt is not the command's; the command's own writes are", async () => {
    const agent = spawnAgent(["--log-level", "debug", "--sandbox", sandbox], { DSH_ACP_DIFFS_BUDGET_MS: "20000" })
    agents.push(agent)
    const client = await connectClient(agent, { _meta: { terminal_output: true } })
    const cwd = makeRepo()
    writeFileSync(join(cwd, ".gitignore"), "build/\n")
    git(cwd, "add", ".gitignore")
    git(cwd, "commit", "-qm", "ignore")
    const sessionId = await client.newSession(cwd)
    const diffsOf = async (command: string) => {
      const { updates } = await client.prompt(sessionId, command)
      const [card] = cardsOf(updates)
      return card!.updates.flatMap((u) => ((u.content ?? []) as Array<Json>).filter((c) => c.type === "diff"))
        .map((d) => [d.path.slice(cwd.length + 1), d.oldText, d.newText])
    }
    // The first comparison sets the watcher up, in the background.
    expect(await diffsOf("true")).toEqual([])
    await eventually("the watcher armed", () => agent.stderrLines.find((l) => l.includes("changed files: watching") && l.includes(cwd)))
    expect(await diffsOf("true")).toEqual([])
    expect(await diffsOf("echo y > y.txt")).toEqual([["y.txt", null, "y\n"]])
    // The user saves, then sends the next prompt at once.
    writeFileSync(join(cwd, "tracked.txt"), "saved by the user\n")
    expect(await diffsOf("echo z > z.txt")).toEqual([["z.txt", null, "z\n"]])
    expect(await diffsOf("mkdir -p build && echo o > build/out.o")).toEqual([])
    expect(await diffsOf("sed -i 's/user/USER/' tracked.txt")).toEqual([["tracked.txt", "saved by the user\n", "saved by the USER\n"]])
    expect(await diffsOf("mkdir sub && echo s > sub/s.txt")).toEqual([["sub/s.txt", null, "s\n"]])
    expect(await diffsOf("true")).toEqual([])
    expect(await diffsOf("echo t > sub/t.txt")).toEqual([["sub/t.txt", null, "t\n"]])
    expect(agent.stderrLines.filter((l) => l.includes("not watching"))).toEqual([])
    expect(protocolViolations(agent, client)).toEqual([])
  })
})
