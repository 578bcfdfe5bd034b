/**
 * Any stdio agent script (an example under `examples/`, run as `node --import tsx <script>`) as a
 * child process, driven by the official ACP SDK client that also answers permission requests. The
 * shapes are `agentProcess.ts`'s (whose `spawnAgent` is bound to `dist/bin.js`), so its
 * `protocolViolations`, `cardsOf` and `agentText` apply.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { fileURLToPath } from "node:url"
import { type AgentProcess, type Client, connectClient, type Decide } from "./agentProcess.js"
import { spawnStdio } from "./stdioProcess.js"

export type { Decide } from "./agentProcess.js"
export type ExampleProcess = AgentProcess
export type ExampleClient = Client

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** Spawns `node --import tsx <script>` (relative to the repository root) with piped stdio. */
export const spawnExample = (script: string, env: Record<string, string> = {}): ExampleProcess =>
  spawnStdio(process.execPath, ["--import", "tsx", script], { cwd: ROOT, env })

/** Connects the SDK client (answering permission requests with `decide`) and sends `initialize`. */
export const connectExample = (
  agent: ExampleProcess,
  clientCapabilities: acp.ClientCapabilities,
  decide: Decide = () => "allow_once"
): Promise<ExampleClient> => connectClient(agent, clientCapabilities, { decide, name: "dsh-acp-examples" })
