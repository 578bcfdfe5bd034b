/**
 * A custom harness in a few dozen lines, served over ACP on stdio with dsh-acp's bridge and bash
 * executor: each non-empty line of a prompt runs as its own bash call (its own terminal card), then
 * the agent sums up how many succeeded.
 *
 *   node --import tsx examples/custom-harness.ts   # speaks ACP on stdin/stdout
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import { Bash, Bridge, Harness, Presentation, Tools } from "../src/index.js"

const { HarnessEvent } = Harness.HarnessEvent

const LineHarness = Layer.effect(
  Harness.Harness.Harness,
  Effect.gen(function*() {
    const bash = yield* Bash.Bash.Bash
    return {
      openSession: ({ sessionId, cwd }) =>
        Effect.gen(function*() {
          const shell = yield* bash.session({ cwd })
          let n = 0
          const prompt: Harness.Harness.HarnessSession["prompt"] = (blocks, { cancel }) => {
            const lines = blocks.flatMap((b) => (b._tag === "Text" ? b.text.split("\n") : [])).filter((l) => l.trim() !== "")
            const tally = { ok: 0, failed: 0 }
            // One card per line; a cancelled turn skips the lines not yet started.
            const runLine = (command: string) =>
              Stream.unwrap(Effect.gen(function*() {
                if (yield* Deferred.isDone(cancel)) return Stream.empty
                const args = { command }
                const callId = `${sessionId}-${++n}`
                const dir = yield* shell.cwd
                const close = (presentation: Presentation.Intent.ResultIntent) => {
                  tally[Presentation.Intent.statusOf(presentation) === "completed" ? "ok" : "failed"]++
                  return HarnessEvent.ToolCallCompleted({ callId, presentation })
                }
                return Stream.concat(
                  Stream.make(HarnessEvent.ToolCallStarted({ callId, presentation: Tools.BashTool.presentCall(args, { cwd: dir }), pending: false })),
                  shell.run(args, { cancel: Deferred.await(cancel) }).pipe(
                    Stream.map((event) =>
                      event._tag === "Output"
                        ? HarnessEvent.ToolOutput({ callId, data: event.data })
                        : close(Tools.BashTool.presentResult(args, event.result.text, { cwd: dir }))),
                    Stream.catchAll((error) => Stream.make(close(Presentation.Intent.failure(error.message))))
                  )
                )
              }))
            return Stream.concat(
              Stream.flatMap(Stream.fromIterable(lines), runLine),
              Stream.fromEffect(Deferred.isDone(cancel)).pipe(Stream.flatMap((cancelled) =>
                Stream.make(
                  HarnessEvent.AgentText({ text: lines.length === 0 ? "Send one bash command per line." : `${tally.ok} succeeded, ${tally.failed} failed.` }),
                  HarnessEvent.TurnEnded({ stopReason: cancelled ? "cancelled" : "end_turn" })
                )))
            )
          }
          return { prompt, background: Stream.empty, commands: [] }
        })
    }
  })
)

const program = Bridge.Server.serveStdio({ agentInfo: { name: "custom-harness-example", title: "Lines", version: "0.0.0" } }).pipe(
  Effect.provide(LineHarness),
  Effect.provide(Bash.BashLive.layer()),
  // stdout is the protocol channel: logs go to stderr.
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)))
)

Effect.runPromise(program).catch((error) => {
  process.stderr.write(`custom-harness: ${String(error)}\n`)
  process.exit(1)
})
