/**
 * Sandbox profiles: what a command may touch, as the bwrap arguments of its namespace's view.
 *
 * - `full`: the filesystem and the network as they are (only the pid namespace): today's behaviour.
 * - `workspace`: the whole filesystem read-only except the project (the session's cwd), the
 *   session's additional directories and the tool's own directory; a private `/tmp`; no network
 *   unless `allowNetwork`.
 * - `read-only`: the whole filesystem read-only (bar the tool's own directory), a private `/tmp`,
 *   no network.
 *
 * Nothing is hidden: what the user can read, a sandboxed command can read (secrets in readable
 * files included). `/dev` is a minimal device tree (null, zero, urandom, tty, a private shm),
 * `/proc` the namespace's own. A denied write fails as the kernel says it (`Read-only file
 * system`); without network the namespace has its own loopback only, so a host server on
 * 127.0.0.1 is unreachable (`Connection refused`) and everything else is `Network is unreachable`.
 *
 * The tool's own directory (per session: the cwd and exit records of each call, full-output files)
 * stays writable in every profile: the command's EXIT trap writes there, and the model reads the
 * full output it is pointed at.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as ChildProcess from "./ChildProcess.js"

export type SandboxProfile = "read-only" | "workspace" | "full"

export const PROFILES: ReadonlyArray<SandboxProfile> = ["read-only", "workspace", "full"]

export const isProfile = (value: unknown): value is SandboxProfile => PROFILES.includes(value as SandboxProfile)

/** Whether the sandboxed profiles can run here; when not, why (said to the user). */
export type Support = { readonly _tag: "Available" } | { readonly _tag: "Unavailable"; readonly reason: string }

export const available: Support = { _tag: "Available" }

/** What one session's commands may touch, besides the profile's fixed rules. */
export interface Scope {
  /** The project: the session's starting cwd. */
  readonly workspace: string
  readonly additionalDirectories: ReadonlyArray<string>
  /** The tool's own directory for this session. */
  readonly toolDir: string
  /** The workspace profile may reach the network (`--allow-network`). */
  readonly allowNetwork: boolean
}

/** The absolute, symlink-free form of a directory (bwrap binds what the host path resolves to). */
const real = (dir: string): string => {
  try {
    return fs.realpathSync(dir)
  } catch {
    return path.resolve(dir)
  }
}

/**
 * The namespace's view for a profile (bwrap arguments after the pid-namespace flags). Order
 * matters: the read-only root first, then `/dev`, `/proc` and the private `/tmp` over it, then the
 * session's directories (parents before children): writable ones for `workspace`, read-only ones
 * for `read-only` when under `/tmp` (bound again so the private `/tmp` does not hide them), and
 * the tool's own directory. `--bind-try`: a directory that does not exist (an additional directory
 * removed meanwhile) is skipped, not an error that would fail every command.
 */
export const view = (profile: SandboxProfile, scope: Scope): ReadonlyArray<string> => {
  if (profile === "full") return ChildProcess.FULL_VIEW
  const binds = new Map<string, string>()
  for (const dir of [scope.workspace, ...scope.additionalDirectories].map(real)) {
    // Read-only: the root already shows them, except under the private /tmp (each bind costs a mount).
    if (profile === "workspace") binds.set(dir, "--bind-try")
    else if (dir === "/tmp" || dir.startsWith("/tmp/")) binds.set(dir, "--ro-bind-try")
  }
  binds.set(real(scope.toolDir), "--bind-try")
  const dirs = [...binds.keys()].sort((a, b) => a.length - b.length)
  const network = profile === "workspace" && scope.allowNetwork
  return [
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/tmp",
    ...dirs.flatMap((dir) => [binds.get(dir)!, dir, dir]),
    ...(network ? [] : ["--unshare-net"])
  ]
}

/**
 * Environment of a sandboxed command: `TMPDIR` points at the private `/tmp` (an inherited one such
 * as `/tmp/user/1000` does not exist there, and a read-only one would fail every `mktemp`).
 */
export const sandboxedEnv: Readonly<Record<string, string>> = { TMPDIR: "/tmp" }

/**
 * Runs `true` under the strictest view (read-only root, private `/tmp`, a writable bind, a new
 * network namespace): bwrap may contain processes and still be unable to make these (e.g. a
 * container that forbids new network namespaces).
 */
export const probe = (bwrap: string, toolDir: string): Effect.Effect<Support> =>
  ChildProcess.probeBwrap(bwrap, "2 seconds", view("read-only", { workspace: toolDir, additionalDirectories: [], toolDir, allowNetwork: false })).pipe(
    Effect.map((result): Support => {
      switch (result._tag) {
        case "Works":
          return available
        case "Missing":
          return { _tag: "Unavailable", reason: "bwrap is not installed" }
        case "Broken":
          return { _tag: "Unavailable", reason: `bwrap cannot make a read-only, offline namespace here: ${result.reason.split("\n")[0]}` }
      }
    })
  )
