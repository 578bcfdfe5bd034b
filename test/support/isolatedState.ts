/**
 * Vitest global setup: every agent a test starts persists its sessions (the command's default), so
 * the whole run gets its own `XDG_STATE_HOME` — no test writes to the real home — removed at the end.
 * Workers and the agents they spawn inherit it; a test that checks persistence sets its own.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export default function setup() {
  const dir = mkdtempSync(join(tmpdir(), "dsh-acp-test-state-"))
  process.env["XDG_STATE_HOME"] = dir
  return () => rmSync(dir, { recursive: true, force: true })
}
