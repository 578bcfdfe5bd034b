/**
 * The snapshot launcher (`dist/dsh-acp`, scripts/snapshot.mjs) over real stdio: the build made its
 * blob, a start from it answers `initialize` and runs a command, reads the environment, arguments
 * and cwd of its own start (not the build's), and the launcher starts `node dist/bin.js` instead
 * when the snapshot cannot load (NODE_OPTIONS set, node changed since the build). Which path a start
 * took is read from the agent's /proc cmdline (the launcher execs node, so the pid is node's).
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BIN, cardsOf, connectClient, LAUNCHER, protocolViolations, spawnAgent } from "../support/agentProcess.js"

const DIST = join(BIN, "..")
const NO_NODE_OPTIONS = { NODE_OPTIONS: undefined }

const cmdline = (pid: number): Array<string> => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((a) => a !== "")

/** Starts the launcher, runs `script` in a session in `cwd`; returns the card's output and the cmdline. */
const runThrough = async (launcher: string, script: string, cwd: string, env: Readonly<Record<string, string | undefined>> = {}) => {
  const agent = spawnAgent([], { ...NO_NODE_OPTIONS, ...env }, { launcher })
  try {
    const client = await connectClient(agent, { _meta: { terminal_output: true } })
    const argv = cmdline(agent.pid)
    expect(client.initializeResponse.protocolVersion).toBe(1)
    const sessionId = await client.newSession(cwd)
    const { response, updates } = await client.prompt(sessionId, script)
    expect(response.stopReason).toBe("end_turn")
    const [card] = cardsOf(updates)
    expect(card?.final?.status).toBe("completed")
    expect(protocolViolations(agent, client)).toEqual([])
    return { output: card!.output, argv }
  } finally {
    await agent.stop()
  }
}

describe("the snapshot launcher", () => {
  it("the build made the blob and the launcher", () => {
    expect(existsSync(join(DIST, "dsh-acp.blob"))).toBe(true)
    expect(readFileSync(LAUNCHER, "utf8")).toMatch(/^#!\/bin\/sh\n/)
  })

  it("starts from the snapshot, answers initialize and runs a command in the session's cwd", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "dsh-acp-snapshot-cwd-"))
    try {
      const { output, argv } = await runThrough(LAUNCHER, "echo hi; pwd", cwd)
      expect(argv).toContain("--snapshot-blob")
      expect(argv).not.toContain(BIN)
      expect(output).toBe(`hi\n${cwd}\n`)
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("reads the environment of its own start, not the build's (sessions go to that XDG_STATE_HOME)", async () => {
    const state = mkdtempSync(join(tmpdir(), "dsh-acp-snapshot-state-"))
    try {
      const { output, argv } = await runThrough(LAUNCHER, "echo \"$DSH_SNAPSHOT_PROBE\"", state, {
        XDG_STATE_HOME: state,
        DSH_SNAPSHOT_PROBE: "from this start"
      })
      expect(argv).toContain("--snapshot-blob")
      // The executor scrubs the environment by name; an unremarkable variable passes.
      expect(output).toBe("from this start\n")
      expect(readdirSync(join(state, "dsh-acp", "sessions")).some((f) => f.endsWith(".jsonl"))).toBe(true)
    } finally {
      rmSync(state, { recursive: true, force: true })
    }
  })

  it("passes arguments node also knows to the agent (--version, --help)", () => {
    const env = { ...process.env }
    delete env["NODE_OPTIONS"]
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { version: string }
    expect(execFileSync(LAUNCHER, ["--version"], { encoding: "utf8", env }).trim()).toBe(pkg.version)
    expect(execFileSync(LAUNCHER, ["--help"], { encoding: "utf8", env })).toMatch(/^dsh-acp /)
  })

  it("starts node dist/bin.js when NODE_OPTIONS is set (a V8 flag there would reject the blob)", async () => {
    const { output, argv } = await runThrough(LAUNCHER, "echo fallback", tmpdir(), { NODE_OPTIONS: "--max-old-space-size=4096" })
    expect(argv).not.toContain("--snapshot-blob")
    expect(argv).toContain(BIN)
    expect(output).toBe("fallback\n")
  })

  it("starts node dist/bin.js when node's mtime is not the build's (node was replaced)", async () => {
    // A copy of dist/ (links) whose stamp was made now, not with node's mtime: as after an upgrade.
    const dir = mkdtempSync(join(tmpdir(), "dsh-acp-snapshot-dist-"))
    try {
      for (const name of readdirSync(DIST)) if (name !== "dsh-acp.node" && name !== "dsh-acp") symlinkSync(join(DIST, name), join(dir, name))
      writeFileSync(join(dir, "dsh-acp.node"), "")
      const launcher = join(dir, "dsh-acp")
      copyFileSync(LAUNCHER, launcher)
      writeFileSync(launcher, readFileSync(launcher, "utf8").replace(/^dir=.*$/m, `dir='${dir}'`), { mode: 0o755 })
      const { output, argv } = await runThrough(launcher, "echo fallback", tmpdir())
      expect(argv).not.toContain("--snapshot-blob")
      expect(argv).toContain(join(dir, "bin.js"))
      expect(output).toBe("fallback\n")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
