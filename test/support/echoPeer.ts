/**
 * A tiny agent-shaped process for the stdio test: the JSON-RPC peer on real stdin/stdout with an
 * `echo`, a `slow` and an `ask` method (`ask` sends a request back to the client and returns its
 * answer). Logs go to stderr; stdout carries protocol lines only. Run with `node --import tsx`.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as JsonRpc from "../../src/Bridge/JsonRpc.js"
import * as Stdio from "../../src/Bridge/Stdio.js"

const program = Effect.gen(function*() {
  const peer = yield* JsonRpc.make({ write: Stdio.stdoutLineWriter(), maxLineBytes: 1024 })
  yield* peer.handle("echo", Schema.Struct({ text: Schema.String }), (p) => Effect.succeed({ text: p.text }))
  yield* peer.handle("slow", Schema.Struct({ ms: Schema.Number }), (p) => Effect.sleep(p.ms).pipe(Effect.as("slept")))
  yield* peer.handle("ask", Schema.Unknown, () => peer.request("client/question", { q: 1 }))
  yield* Effect.logInfo("echo peer ready")
  yield* peer.serve(Stdio.stdin)
  yield* Effect.logInfo("echo peer: input ended, in-flight answered")
})

Effect.runPromiseExit(
  program.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))))
).then((exit) => {
  if (Exit.isFailure(exit)) console.error(exit.cause)
  process.exitCode = Exit.isSuccess(exit) ? 0 : 1
})
