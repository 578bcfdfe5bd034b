/**
 * `dsh-acp demo`: starts the agent as a child process over real stdio, plays a Zed-like client
 * (advertising `_meta.terminal_output`, or nothing with `--fallback`) and draws each card in this
 * terminal as the updates arrive, so the main job can be seen without an editor.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import { spawn } from "node:child_process"
import { JsonRpc, type Peer } from "./Bridge/JsonRpc.js"
import * as Stdio from "./Bridge/Stdio.js"
import type { Command } from "./Cli.js"

const DEFAULT_SCRIPTS: ReadonlyArray<string> = [
  `echo "hello from $(basename "$PWD")"; ls | head -n 3`,
  `for i in 1 2 3; do echo "step $i"; sleep 0.3; done`,
  `printf '\\033[32mgreen\\033[0m and plain\\n'; exit 3`,
  "cd /tmp",
  "pwd"
]

const isTty = process.stdout.isTTY === true
const dim = (s: string) => (isTty ? `\x1b[2m${s}\x1b[0m` : s)
const bold = (s: string) => (isTty ? `\x1b[1m${s}\x1b[0m` : s)
const out = (s: string) => process.stdout.write(s)

type Json = Record<string, any>

/** Draws `session/update`s the way Zed's card reads them: info from `tool_call`, output and exit from updates. */
const draw = (update: Json) => {
  const meta: Json = update._meta ?? {}
  switch (update.sessionUpdate) {
    case "tool_call": {
      const cwd = meta.terminal_info?.cwd
      out(`${dim(`┌─ ${cwd ?? "(no terminal card)"} · ${update.status}`)}\n${bold(`$ ${update.title}`)}\n`)
      for (const c of update.content ?? []) if (c.type === "content") out(dim(`  ${c.content.text}\n`))
      break
    }
    case "tool_call_update": {
      const data = meta.terminal_output?.data ?? meta.terminal_output_delta?.data
      if (typeof data === "string") out(data)
      const exit = meta.terminal_exit
      if (exit !== undefined) {
        out(dim(`└─ ${exit.signal !== null ? `killed by ${exit.signal}` : `exit ${exit.exit_code}`} · ${update.status}\n\n`))
      } else if (update.status !== undefined && update.status !== "in_progress") {
        // The text fallback: one fenced block with the rendered result.
        for (const c of update.content ?? []) if (c.type === "content") out(`${c.content.text}\n`)
        out(dim(`└─ ${update.status}\n\n`))
      }
      break
    }
    case "agent_message_chunk":
      out(`${update.content?.text ?? ""}\n`)
      break
  }
}

const Update = Schema.Struct({ sessionId: Schema.String, update: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })

const session = (peer: Peer, scripts: ReadonlyArray<string>, fallback: boolean) =>
  Effect.gen(function*() {
    const init = (yield* peer.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: fallback ? {} : { _meta: { terminal_output: true, "terminal-auth": true } },
      clientInfo: { name: "dsh-acp-demo", version: "1" }
    })) as Json
    out(dim(`connected to ${init.agentInfo?.name} ${init.agentInfo?.version} · ${fallback ? "text fallback" : "terminal cards"}\n\n`))
    const { sessionId } = (yield* peer.request("session/new", { cwd: process.cwd(), mcpServers: [] })) as Json
    for (const script of scripts) {
      const { stopReason } = (yield* peer.request("session/prompt", { sessionId, prompt: [{ type: "text", text: script }] })) as Json
      if (stopReason !== "end_turn") out(dim(`(turn ended: ${stopReason})\n`))
    }
    yield* peer.request("session/close", { sessionId })
  })

export const main = (command: Extract<Command, { _tag: "Demo" }>) => {
  const scripts = command.script === undefined ? DEFAULT_SCRIPTS : [command.script]
  const args = [process.argv[1]!, "--log-level", command.options.logLevel]
  if (!command.options.liveOutput) args.push("--no-live-output")
  if (command.options.timeoutMs !== undefined) args.push("--timeout-ms", String(command.options.timeoutMs))
  const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] })
  const program = Effect.gen(function*() {
    const peer = yield* JsonRpc
    yield* peer.onNotification("session/update", Update, ({ update }) => Effect.sync(() => draw(update)))
    const serving = yield* Effect.fork(peer.serve(Stdio.fromReadable(child.stdout)))
    yield* session(peer, scripts, command.fallback)
    child.stdin.end()
    yield* serving.await
  }).pipe(
    Effect.catchAll((error) => Effect.sync(() => {
      process.stderr.write(`dsh-acp demo: ${String((error as { message?: unknown }).message ?? error)}\n`)
      process.exitCode = 1
      child.kill()
    })),
    Effect.provide(Layer.merge(
      JsonRpc.layer({ write: Stdio.lineWriter(child.stdin) }),
      Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))
    ))
  )
  NodeRuntime.runMain(program, { disablePrettyLogger: true })
}
