/**
 * Sandbox profiles on real bwrap: what a command may write, where its `/tmp` goes, whether it
 * reaches a server the test started on the host's loopback, that the usual tools still work, that
 * a background task is confined as its session, and that a profile switch applies to the next
 * command (the session's pre-spawned namespace included). Skipped, with the reason, where bwrap
 * cannot make the sandbox.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Bash, type BashSession } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import * as Sandbox from "../../src/Bash/Sandbox.js"
import { run, sandboxProblem, token } from "./helpers.js"

let root: string
let project: string
let outside: string
let server: net.Server
let port: number

beforeAll(async () => {
  // The project under /tmp (bound over the sandbox's private /tmp), "outside" where a sandboxed
  // command sees the host's directory: /var/tmp.
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "dsh-acp-sandbox-")))
  project = path.join(root, "project")
  fs.mkdirSync(project)
  outside = fs.realpathSync(fs.mkdtempSync(path.join(fs.existsSync("/var/tmp") ? "/var/tmp" : process.cwd(), "dsh-acp-sandbox-outside-")))
  spawnSync("git", ["init", "-q", project])
  server = net.createServer((socket) => socket.end("hello from the host\n"))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as net.AddressInfo).port
})

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  fs.rmSync(root, { recursive: true, force: true })
  fs.rmSync(outside, { recursive: true, force: true })
})

const withSession = <A, E>(
  config: { readonly sandbox: Sandbox.SandboxProfile; readonly allowNetwork?: boolean },
  f: (session: BashSession) => Effect.Effect<A, E>
) =>
  Effect.scoped(Effect.gen(function*() {
    const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: "bwrap", tempDir: path.join(root, "tool"), ...config }))
    const session = yield* bash.session({ cwd: project })
    expect(yield* session.profile).toBe(config.sandbox)
    return yield* f(session)
  }))

const connect = () => `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3`

describe.skipIf(sandboxProblem !== undefined)(`sandbox profiles${sandboxProblem === undefined ? "" : ` (skipped: ${sandboxProblem})`}`, () => {
  for (const profile of ["read-only", "workspace"] as const) {
    it.live(`${profile}: no write outside the workspace, a private /tmp, no network`, () =>
      withSession({ sandbox: profile }, (s) =>
        Effect.gen(function*() {
          const tok = token()
          const out = yield* run(s, { command: `echo x > ${outside}/f-${tok}` })
          expect(out.parts.end).toEqual({ _tag: "Exited", code: 1 })
          expect(out.output).toContain("Read-only file system")
          expect(fs.existsSync(`${outside}/f-${tok}`)).toBe(false)

          const home = yield* run(s, { command: `touch ${os.homedir()}/dsh-acp-sandbox-${tok}` })
          expect(home.output).toContain("Read-only file system")
          expect(fs.existsSync(`${os.homedir()}/dsh-acp-sandbox-${tok}`)).toBe(false)

          const tmp = yield* run(s, { command: `echo x > /tmp/dsh-acp-sandbox-${tok} && cat /tmp/dsh-acp-sandbox-${tok}` })
          expect(tmp.output).toBe("x\n")
          expect(fs.existsSync(`/tmp/dsh-acp-sandbox-${tok}`)).toBe(false)

          const inside = yield* run(s, { command: `echo x > f-${tok}` })
          if (profile === "workspace") {
            expect(inside.parts.end).toEqual({ _tag: "Exited", code: 0 })
            expect(fs.readFileSync(path.join(project, `f-${tok}`), "utf8")).toBe("x\n")
          } else {
            expect(inside.output).toContain("Read-only file system")
            expect(fs.existsSync(path.join(project, `f-${tok}`))).toBe(false)
          }

          const tcp = yield* run(s, { command: connect() })
          expect(tcp.parts.end).not.toEqual({ _tag: "Exited", code: 0 })
          expect(tcp.output).not.toContain("hello from the host")
          const far = yield* run(s, { command: `exec 3<>/dev/tcp/192.0.2.1/80` })
          expect(far.output).toContain("Network is unreachable")
        })))

    it.live(`${profile}: git, node and /usr work; the cwd still persists`, () =>
      withSession({ sandbox: profile }, (s) =>
        Effect.gen(function*() {
          const r = yield* run(s, { command: `git status --short && node -e 'console.log(6*7)' && ls /usr | grep -c bin && cd .git` })
          expect(r.parts.end).toEqual({ _tag: "Exited", code: 0 })
          expect(r.output).toContain("42\n")
          expect(yield* s.cwd).toBe(path.join(project, ".git"))
        })))

    it.live(`${profile}: a background task is confined as its session`, () =>
      Effect.gen(function*() {
        const tok = token()
        const task = yield* withSession({ sandbox: profile }, (s) =>
          Effect.gen(function*() {
            const t = yield* s.start({ command: `sleep 0.2; echo x > ${outside}/bg-${tok}`, run_in_background: true })
            return yield* t.events.pipe(Stream.runCollect)
          }))
        const finished = [...task].at(-1)
        expect(finished?._tag === "Finished" && finished.result.text).toContain("Read-only file system")
        expect(fs.existsSync(`${outside}/bg-${tok}`)).toBe(false)
      }))
  }

  it.live("workspace with allowNetwork reaches the host's loopback; full does too", () =>
    Effect.gen(function*() {
      for (const config of [{ sandbox: "workspace" as const, allowNetwork: true }, { sandbox: "full" as const }]) {
        const r = yield* withSession(config, (s) => run(s, { command: connect() }))
        expect(r.output).toBe("hello from the host\n")
      }
    }))

  it.live("additional directories are writable in the workspace profile", () =>
    Effect.scoped(Effect.gen(function*() {
      const tok = token()
      const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: "bwrap", sandbox: "workspace", tempDir: path.join(root, "tool") }))
      const s = yield* bash.session({ cwd: project, additionalDirectories: [outside] })
      const r = yield* run(s, { command: `echo x > ${outside}/extra-${tok}` })
      expect(r.parts.end).toEqual({ _tag: "Exited", code: 0 })
      expect(fs.existsSync(`${outside}/extra-${tok}`)).toBe(true)
    })))

  it.live("a profile switch applies to the next command, whether or not its spare namespace was ready", () =>
    withSession({ sandbox: "full" }, (s) =>
      Effect.gen(function*() {
        const write = (name: string) => run(s, { command: `echo x > ${outside}/${name}` })
        const tok = token()
        expect((yield* write(`a-${tok}`)).parts.end).toEqual({ _tag: "Exited", code: 0 })
        // Right away (the spare made for `full` is still there or being replaced) …
        yield* s.setProfile("read-only")
        expect((yield* write(`b-${tok}`)).output).toContain("Read-only file system")
        // … and after the spare for the new profile had time to start.
        yield* s.setProfile("workspace")
        yield* Effect.sleep("300 millis")
        expect((yield* write(`c-${tok}`)).output).toContain("Read-only file system")
        yield* s.setProfile("full")
        yield* Effect.sleep("300 millis")
        expect((yield* write(`d-${tok}`)).parts.end).toEqual({ _tag: "Exited", code: 0 })
        expect(fs.readdirSync(outside).filter((f) => f.endsWith(tok)).sort()).toEqual([`a-${tok}`, `d-${tok}`])
      })))
})

describe("sandbox without bwrap", () => {
  it.live("process groups offer no sandbox: a sandboxed default falls back to full, and setProfile says why", () =>
    Effect.scoped(Effect.gen(function*() {
      const bash = yield* Effect.provide(Bash, BashLive.layer({ containment: "process-group", sandbox: "read-only" }))
      const s = yield* bash.session({ cwd: os.tmpdir() })
      expect(yield* s.profile).toBe("full")
      expect((yield* s.sandbox)._tag).toBe("Unavailable")
      const error = yield* Effect.flip(s.setProfile("workspace"))
      expect(error.reason).toBe("SandboxUnavailable")
      expect(yield* s.profile).toBe("full")
    })))
})

describe("Sandbox.view", () => {
  const scope = { workspace: "/srv/project", additionalDirectories: ["/srv/project/sub", "/tmp/extra"], toolDir: "/tmp/tool", allowNetwork: false }
  const binds = (view: ReadonlyArray<string>) =>
    view.flatMap((arg, i) => arg.endsWith("bind-try") ? [`${arg} ${view[i + 1]}`] : [])

  it("full is the whole filesystem as it is, with the host network", () => {
    expect(Sandbox.view("full", scope)).toEqual(["--dev-bind", "/", "/", "--proc", "/proc"])
  })

  it("workspace binds the project and additional directories writable, parents first, after the private /tmp", () => {
    const view = Sandbox.view("workspace", scope)
    expect(view.slice(0, 9)).toEqual(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"])
    expect(binds(view)).toEqual(["--bind-try /tmp/tool", "--bind-try /tmp/extra", "--bind-try /srv/project", "--bind-try /srv/project/sub"])
    expect(view.at(-1)).toBe("--unshare-net")
    expect(Sandbox.view("workspace", { ...scope, allowNetwork: true })).not.toContain("--unshare-net")
  })

  it("read-only writes only the tool's directory, re-shows what the private /tmp hides, and never has network", () => {
    const view = Sandbox.view("read-only", { ...scope, allowNetwork: true })
    expect(binds(view)).toEqual(["--bind-try /tmp/tool", "--ro-bind-try /tmp/extra"])
    expect(view.at(-1)).toBe("--unshare-net")
  })
})
