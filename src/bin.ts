/**
 * `dsh-acp`: the stdio agent Zed launches, and `dsh-acp demo`. stdout is the protocol channel:
 * logs go to stderr, and nothing here prints to stdout except `--help` and `--version`.
 */
import * as v8 from "node:v8"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { Bash } from "./Bash/Bash.js"
import * as BashLive from "./Bash/BashLive.js"
import * as Server from "./Bridge/Server.js"
import * as SessionStore from "./Bridge/SessionStore.js"
import { type AgentOptions, HELP, type LogLevel as CliLogLevel, parseArgs, VERSION } from "./Cli.js"
import { withFreshServices } from "./FreshServices.js"
import { Harness } from "./Harness/Harness.js"
import * as ShellHarness from "./Harness/ShellHarness.js"
import * as ChangeSettings from "./Tools/Bash/ChangeSettings.js"

const levels: Record<CliLogLevel, LogLevel.LogLevel> = {
  none: LogLevel.None,
  error: LogLevel.Error,
  warning: LogLevel.Warning,
  info: LogLevel.Info,
  debug: LogLevel.Debug
}

/**
 * With `--model`, the model harness over a lazily loaded provider. Both are dynamic imports, so a
 * shell-harness start never evaluates `@effect/ai`, and the provider itself is imported in the
 * background after start (Providers.layerFromSpec), so `initialize` does not wait for it.
 */
const withHarness = (options: AgentOptions) => {
  const spec = options.model
  if (spec === undefined) return Effect.provideServiceEffect(Harness, ShellHarness.make)
  return Effect.provide(Layer.unwrapEffect(Effect.promise(async () => {
    const [ModelHarness, Providers] = await Promise.all([import("./Harness/ModelHarness.js"), import("./Model/Providers.js")])
    return ModelHarness.layer({ approveAll: options.approveAll }).pipe(Layer.provide(Providers.layerFromSpec(spec)))
  })))
}

/** Where sessions are kept (unless `--no-persist`); the harness is named in each log's header. */
const storeConfig = (options: AgentOptions) => {
  const max = Number(process.env["DSH_ACP_PERSIST_MAX_BYTES"])
  return SessionStore.SessionStore.config({
    harness: options.model === undefined ? "shell" : `model:${options.model.provider}:${options.model.model}`,
    ...(Number.isInteger(max) && max > 0 ? { maxBytes: max } : {})
  })
}

/**
 * The agent on stdio. Its services are made by their effects and provided as services rather than
 * built as layers (the library's layers are these same effects): each `Effect.provide(layer)`
 * builds through a memo map and a scope and diffs every FiberRef, and the command's four layers
 * and its logger layer cost ~5 ms of its start before `initialize` could be answered.
 */
const runAgent = (options: AgentOptions) =>
  Server.serveStdio({
    agentInfo: { name: "dsh-acp", title: "DSH", version: VERSION },
    mapping: { liveOutput: options.liveOutput }
  }).pipe(
    options.persist ? Effect.provideService(SessionStore.SessionStore, storeConfig(options)) : (effect) => effect,
    withHarness(options),
    Effect.provideServiceEffect(Bash, BashLive.make({
      ...(options.timeoutMs === undefined ? {} : { defaultTimeoutMs: options.timeoutMs }),
      ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
      allowNetwork: options.allowNetwork
    })),
    Effect.provideService(ChangeSettings.Settings, { enabled: options.diffs, budgetMs: ChangeSettings.budgetFromEnv(), watch: ChangeSettings.watchFromEnv() }),
    // Outermost, so what the services log while they are made goes to stderr too, never to stdout.
    Server.withStderrLogger,
    Logger.withMinimumLogLevel(levels[options.logLevel])
  )

/**
 * `NodeRuntime.runMain` without `@effect/platform`, whose runtime modules cost start-up time for
 * what fits here: run the program, keep the process alive while it runs, interrupt it on
 * SIGINT/SIGTERM (so sessions close and their process groups are killed), and exit non-zero on a
 * failure. A failure is reported on stderr: stdout is the protocol channel.
 */
const runMain = (program: Effect.Effect<void, unknown>): void => {
  const fiber = Effect.runFork(program)
  const keepAlive = setInterval(() => {}, 2 ** 31 - 1)
  let receivedSignal = false
  const onSignal = () => {
    receivedSignal = true
    removeSignalHandlers()
    fiber.unsafeInterruptAsFork(fiber.id())
  }
  const removeSignalHandlers = () => {
    process.off("SIGINT", onSignal)
    process.off("SIGTERM", onSignal)
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
  fiber.addObserver((exit) => {
    removeSignalHandlers()
    clearInterval(keepAlive)
    const failed = Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
    if (failed) process.stderr.write(`dsh-acp: ${Cause.pretty(exit.cause)}\n`)
    // As NodeRuntime does: after a signal or a failure exit now; otherwise let the loop drain.
    if (receivedSignal || failed) process.exit(failed ? 1 : 0)
  })
}

/**
 * Output flows through the executor, the harness and the bridge as one string per pipe chunk, and
 * V8 grows the young generation under such a stream up to 3 x 16 MiB: a 1 GiB flood through the
 * agent peaked at 160-185 MiB RSS; kept at its initial size, at 110-117 MiB at the same speed. A
 * process-wide setting, so the command makes it, not the library (an embedder's process is its
 * own). Made at start, before the model provider's modules are evaluated: set only at the first
 * spawn, a model-mode flood still peaked ~25 MiB higher.
 *
 * Not while the build writes the code cache (`scripts/bundle.mjs`): the cache records V8's flags,
 * and every start compiles the bundle from it BEFORE this runs, with the default flags, so a cache
 * written with the flag changed would be rejected at every start.
 */
const tuneHeap = (): void => {
  if (process.env["DSH_ACP_WRITE_CODE_CACHE"] === "1") return
  v8.setFlagsFromString("--semi-space-growth-factor=1")
}

/** The command: what `node dist/bin.js ARGS` runs (`argv` is ARGS). */
export const main = (argv: ReadonlyArray<string>): void => {
  const command = parseArgs(argv)
  if (Either.isLeft(command)) {
    process.stderr.write(`dsh-acp: ${command.left}\n`)
    process.exitCode = 2
  } else {
    const c = command.right
    switch (c._tag) {
      case "Help":
        process.stdout.write(`${HELP}\n`)
        break
      case "Version":
        process.stdout.write(`${VERSION}\n`)
        break
      case "Agent":
        // The key is held (redacted) by the model spec now. A variable of any name can hold it, so
        // the name-based scrub may not catch it: remove it, so no command can read it from `env`.
        if (c.options.model?.apiKeyEnv !== undefined) delete process.env[c.options.model.apiKeyEnv]
        tuneHeap()
        runMain(withFreshServices(runAgent(c.options)))
        break
      case "Demo":
        // The demo client is a separate chunk: the agent's start-up never loads it.
        import("./Demo.js").then((demo) => demo.main(c), (error) => {
          process.stderr.write(`dsh-acp demo: ${String(error)}\n`)
          process.exitCode = 1
        })
        break
    }
  }
}

// Run at load, except while the build makes the startup snapshot (scripts/snapshot.mjs): there the
// load is frozen into the snapshot, and its entry calls `main` when a start deserializes it.
if (!v8.startupSnapshot.isBuildingSnapshot()) main(process.argv.slice(2))
