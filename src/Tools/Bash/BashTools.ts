/**
 * The bash tools a model is offered — `Bash`, `BashOutput`, `KillBash` — bound to one session's
 * shell: what each tells the model, how it runs on the executor, how it looks. Background tasks get
 * their own cards (`TaskCards`), which outlive the call that started them.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { Bash, type BashConfig, type BashLimits, type BashResult, type BashSession, type TaskOutput } from "../../Bash/Bash.js"
import * as BashLive from "../../Bash/BashLive.js"
import * as Intent from "../../Presentation/Intent.js"
import { make as makeTool, type Tool, type ToolOutcome, type Toolset } from "../Tool.js"
import { BashArgs } from "./BashArgs.js"
import * as BashTool from "./BashTool.js"
import * as ChangeTracker from "./ChangeTracker.js"
import * as TaskCards from "./TaskCards.js"

export const BASH = "Bash"
export const BASH_OUTPUT = "BashOutput"
export const KILL_BASH = "KillBash"

/**
 * The figures the descriptions state, all from the executor (`Bash.config`): what `--timeout-ms` or
 * an embedder's `BashLive.layer({ … })` sets is what the model is told.
 */
export type Figures = Pick<BashConfig, "defaultTimeoutMs" | "maxOutputChars"> & BashLimits

/** The figures of the executor's defaults (`BashLive.defaultConfig`). */
export const DEFAULT_FIGURES: Figures = { ...BashLive.defaultConfig, ...BashLive.limits }

const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(3))} s`

/** What the model is told about `Bash`. */
export const description = (figures: Figures): string =>
  `Runs a bash script (bash --noprofile --norc -c) on the user's machine and returns its output.

- stdout and stderr are merged in arrival order. stdin is /dev/null: interactive prompts fail instead of waiting, so pass flags such as --yes.
- The result is the output followed by status lines, always ending with how the command ended:
  [exit code: N] for a normal exit (0 included), or [killed by signal: SIGTERM] for a signal death.
  Other status lines may come before it: [output truncated: N chars omitted, full output: PATH] (read PATH for the rest),
  [timeout clamped to ${figures.maxTimeoutMs / 1000}s], [timed out after ${figures.defaultTimeoutMs / 1000}s], [background jobs killed: N].
- The working directory persists across calls of this session: a \`cd\` in one call applies to the next. Exported variables and aliases do not persist. \`workdir\` sets the directory for one call only (absolute, or relative to the current one).
- timeout_ms defaults to ${figures.defaultTimeoutMs} (${seconds(figures.defaultTimeoutMs)}) and is at most ${figures.maxTimeoutMs} (${seconds(figures.maxTimeoutMs)}). On timeout the whole process tree gets SIGTERM, then SIGKILL ${seconds(figures.killGraceMs)} later.
- Output is bounded: about ${figures.maxOutputChars} characters, the head and the tail, ANSI colours removed and \\r progress rewrites resolved; the full output is saved to a file named in the truncation line.
- Processes left running with & are killed when the command ends. For servers and watchers use run_in_background: true; the call returns at once with [background task ID started] and the task, owned by this session, keeps running until it exits, is killed, or the session ends.`

/** `Bash`'s description with the executor's default figures (what `BashToolkit` offers). */
export const BASH_DESCRIPTION = description(DEFAULT_FIGURES)

export const BASH_OUTPUT_DESCRIPTION = `Reads the new output of a background task started with Bash (run_in_background: true).

- Returns only the output produced since the previous BashOutput call for that task (the first call returns everything so far), ANSI-stripped and bounded like a Bash result.
- The last line says whether the task is still running ([background task ID running]) or how it ended ([background task ID ended] followed by its [exit code: N] or [killed by signal: NAME] line).
- Does not wait: call it again later to see more.`

/** What the model is told about `KillBash`. */
export const killDescription = (figures: Pick<Figures, "killGraceMs">): string =>
  `Stops a background task of this session (started with Bash run_in_background: true).

- Sends SIGTERM to the task's whole process tree, then SIGKILL ${seconds(figures.killGraceMs)} later if it is still alive.
- Returns the task's final status line. Killing a task that already ended just reports how it ended.`

export const KILL_BASH_DESCRIPTION = killDescription(DEFAULT_FIGURES)

/** The arguments of `BashOutput` and `KillBash`. */
export const TaskArgs = Schema.Struct({
  task_id: Schema.String.annotations({ description: "The id of a background task of this session, e.g. bg-1." })
}).annotations({ identifier: "TaskArgs" })
export type TaskArgs = typeof TaskArgs.Type

/** The last line of a finished task's result: its exit or signal line. */
const endLine = (result: BashResult) => result.text.trimEnd().split("\n").at(-1) ?? ""

/** What `BashOutput` returns to the model. */
export const renderTaskOutput = (read: TaskOutput): string => {
  const status = read.running
    ? `[background task ${read.info.id} running]`
    : `[background task ${read.info.id} ended]\n${read.info.result ? endLine(read.info.result) : ""}`.trimEnd()
  return read.output === "" ? `(no new output)\n${status}` : `${read.output.replace(/\n?$/, "\n")}${status}`
}

/** A task tool's result: its text, as a plain card. */
const presentText = (_args: TaskArgs, result: string, context: { readonly isFailure: boolean }): Intent.ResultIntent =>
  Intent.GenericResult.make({ status: context.isFailure ? "failed" : "completed", content: [Intent.text(result)] })

const couldNotRun = (error: { readonly message: string }): ToolOutcome => ({ text: `The command could not run: ${error.message}`, isFailure: true })

/**
 * The three tools on one session's shell; task cards go to `cards`. With a `tracker`, a command's
 * card (a task's, when it ends) also shows the files the command changed. `figures` are the
 * executor's (`Bash.config`), stated in the descriptions.
 */
export const forShell = (
  shell: BashSession,
  cards: TaskCards.TaskCards,
  tracker?: ChangeTracker.ChangeTracker,
  figures: Figures = DEFAULT_FIGURES
): ReadonlyArray<Tool> => {
  const changedSince = (args: BashArgs, cwd: string) =>
    tracker === undefined ? Effect.succeed(undefined) : tracker.since(BashTool.callCwd(args, cwd))

  const runForeground = (args: BashArgs, context: Parameters<Tool["handle"]>[1]) =>
    Effect.gen(function*() {
      const changedFiles = yield* changedSince(args, context.cwd)
      const result = yield* shell.run(args, { cancel: context.cancel }).pipe(
        Stream.runFoldEffect(undefined as BashResult | undefined, (last, event) =>
          event._tag === "Output" ? Effect.as(context.output(event.data, event.bytes), last) : Effect.succeed(event.result))
      )
      const outcome: ToolOutcome = result === undefined
        ? { text: "[the command ended without a result]", isFailure: true }
        : { text: result.text, isFailure: result._tag === "Failed" }
      return changedFiles === undefined ? outcome : { ...outcome, changedFiles }
    })

  const startBackground = (args: BashArgs, context: Parameters<Tool["handle"]>[1]) =>
    Effect.gen(function*() {
      const changedFiles = yield* changedSince(args, context.cwd)
      const task = yield* shell.start(args)
      yield* cards.open(`${context.callId}-${task.info.id}`, args, task, changedFiles)
      return { text: task.started.text, isFailure: task.started._tag === "Failed" } satisfies ToolOutcome
    })

  const bash = makeTool({
    name: BASH,
    description: description(figures),
    parameters: BashArgs,
    sandboxed: true,
    presentCall: BashTool.presentCall,
    presentResult: BashTool.presentResult,
    handle: (args, context) =>
      (args.run_in_background === true ? startBackground(args, context) : runForeground(args, context)).pipe(
        Effect.catchTag("BashError", (error) => Effect.succeed(couldNotRun(error)))
      )
  })

  const bashOutput = makeTool({
    name: BASH_OUTPUT,
    description: BASH_OUTPUT_DESCRIPTION,
    parameters: TaskArgs,
    requiresPermission: () => false,
    presentCall: (args) => Intent.GenericCall.make({ title: `Read output of ${args.task_id}`, kind: "read", input: args }),
    presentResult: presentText,
    handle: (args) =>
      shell.read(args.task_id).pipe(
        Effect.map((read): ToolOutcome => ({ text: renderTaskOutput(read), isFailure: false })),
        Effect.catchTag("BashError", (error) => Effect.succeed({ text: error.message, isFailure: true }))
      )
  })

  const killBash = makeTool({
    name: KILL_BASH,
    description: killDescription(figures),
    parameters: TaskArgs,
    requiresPermission: () => false,
    presentCall: (args) => Intent.GenericCall.make({ title: `Kill ${args.task_id}`, kind: "execute", input: args }),
    presentResult: presentText,
    handle: (args) =>
      shell.kill(args.task_id).pipe(
        Effect.map((info): ToolOutcome => ({ text: `Killed ${info.id}.${info.result ? `\n${endLine(info.result)}` : ""}`, isFailure: false })),
        Effect.catchTag("BashError", (error) => Effect.succeed({ text: error.message, isFailure: true }))
      )
  })

  return [bash, bashOutput, killBash]
}

/**
 * The bash tools as a toolset: each session gets its own shell (cwd, tasks), task cards and
 * changed-files tracker; closing the session kills its tasks, their cards get their exits, then
 * the shell goes.
 */
export const toolset: Toolset<Bash> = {
  prepare: Effect.flatMap(Bash, (bash) => bash.prepare ?? Effect.void),
  open: ({ additionalDirectories, cwd }) =>
    Effect.gen(function*() {
      const bash = yield* Bash
      const shell = yield* bash.session({ cwd, additionalDirectories })
      const cards = yield* TaskCards.make(shell)
      const tracker = yield* ChangeTracker.forSession
      return { tools: forShell(shell, cards, tracker, bash.config), cwd: shell.cwd, background: cards.events, sandbox: shell }
    })
}
