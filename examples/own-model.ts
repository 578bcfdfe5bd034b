/**
 * An agent that brings its own `LanguageModel` and reuses dsh-acp's bash tool, model harness and
 * ACP bridge. The model here is a tiny offline "echo" model made with `LanguageModel.make`: it runs
 * the user's message as a bash command, then reports how the command ended. Replace `EchoModel`
 * with any `@effect/ai` provider layer (or your own) and the rest stays the same.
 *
 *   node --import tsx examples/own-model.ts      # speaks ACP on stdin/stdout
 *
 * Set OWN_MODEL_APPROVE_ALL=1 to run commands without asking the user.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import { Bash, Bridge, Harness } from "../src/index.js"

let calls = 0

/** The last message's text (a user message) or the last tool result's text (after a command). */
const lastTurn = (prompt: Prompt.Prompt) => {
  const last = prompt.content.at(-1)
  if (last?.role === "tool") return { _tag: "ToolResult" as const, text: String(last.content.at(-1)?.result ?? "") }
  const text = last?.role === "user" ? last.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n") : ""
  return { _tag: "User" as const, text }
}

const reply = (text: string, id: string): ReadonlyArray<Response.StreamPartEncoded> => [
  { type: "text-start", id },
  { type: "text-delta", id, delta: text },
  { type: "text-end", id }
]

const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 }

/** Step 1: run the user's text with the `Bash` tool. Step 2: say how it ended. */
const EchoModel = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: () => Effect.die(new Error("EchoModel only streams")),
    streamText: ({ prompt }) => {
      const turn = lastTurn(prompt)
      const parts: ReadonlyArray<Response.StreamPartEncoded> = turn._tag === "ToolResult"
        ? [...reply(`The command ended: ${turn.text.trimEnd().split("\n").at(-1)}`, "answer"), { type: "finish", reason: "stop", usage }]
        : turn.text.trim() === ""
        ? [...reply("Send a bash command and I will run it.", "help"), { type: "finish", reason: "stop", usage }]
        : [
          ...reply("Running it.\n", "intro"),
          { type: "tool-call", id: `echo-call-${++calls}`, name: "Bash", params: { command: turn.text } },
          { type: "finish", reason: "tool-calls", usage }
        ]
      return Stream.fromIterable(parts)
    }
  })
)

const program = Bridge.Server.serveStdio({ agentInfo: { name: "own-model-example", title: "Own model", version: "0.0.0" } }).pipe(
  Effect.provide(Harness.ModelHarness.layer({ approveAll: process.env.OWN_MODEL_APPROVE_ALL === "1", maxTurnRequests: 10 })),
  Effect.provide(Layer.merge(Bash.BashLive.layer(), EchoModel)),
  // stdout is the protocol channel: logs go to stderr.
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)))
)

Effect.runPromise(program).catch((error) => {
  process.stderr.write(`own-model: ${String(error)}\n`)
  process.exit(1)
})
