/**
 * The default harness: each prompt is a bash script, run as one bash call in the session's cwd,
 * so the agent panel works as a terminal. `/bg`, `/jobs` and `/kill` manage background tasks.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { Bash, type BashSession } from "../Bash/Bash.js"
import type { BashArgs } from "../Tools/Bash/BashArgs.js"
import * as BashTool from "../Tools/Bash/BashTool.js"
import * as ChangeTracker from "../Tools/Bash/ChangeTracker.js"
import * as TaskCards from "../Tools/Bash/TaskCards.js"
import { Harness, type HarnessSession, type PromptBlock, type SlashCommand } from "./Harness.js"
import { HarnessEvent } from "./HarnessEvent.js"
import * as Modes from "./Modes.js"

export const commands: ReadonlyArray<SlashCommand> = [
  { name: "bg", description: "Run a script as a background task; its card stays open until it ends", hint: "script" },
  { name: "jobs", description: "List this session's background tasks" },
  { name: "kill", description: "Kill a background task", hint: "task id, e.g. bg-1" }
]

const HELP = [
  "This agent runs each prompt as a bash script in the session's directory.",
  "Type a command such as `ls -la`; `cd` persists to the next prompt.",
  "Slash commands: `/bg <script>` runs a background task, `/jobs` lists tasks, `/kill <id>` stops one."
].join("\n")

/** One command line of a prompt: `/name rest`, or a script. */
type Parsed =
  | { readonly _tag: "Script"; readonly script: string }
  | { readonly _tag: "Slash"; readonly name: string; readonly rest: string }
  | { readonly _tag: "Empty"; readonly reason: string }

export const parsePrompt = (blocks: ReadonlyArray<PromptBlock>): Parsed => {
  const text = blocks.flatMap((b) => (b._tag === "Text" ? [b.text] : [])).join("\n")
  if (text.trim() === "") {
    const other = blocks.find((b) => b._tag === "Other")
    const type = other?._tag === "Other" ? other.type : undefined
    return { _tag: "Empty", reason: type !== undefined ? `${/^[aeiou]/i.test(type) ? "An" : "A"} ${type} block is not a script.` : "The prompt is empty." }
  }
  const slash = /^\/(bg|jobs|kill)(?:\s+([\s\S]*))?$/.exec(text.trim())
  return slash ? { _tag: "Slash", name: slash[1]!, rest: (slash[2] ?? "").trim() } : { _tag: "Script", script: text }
}

const message = (text: string, stopReason: "end_turn" | "cancelled" = "end_turn") =>
  Stream.make(HarnessEvent.AgentText({ text }), HarnessEvent.TurnEnded({ stopReason }))

const jobsTable = (shell: BashSession) =>
  Effect.map(shell.list, (tasks) =>
    tasks.length === 0
      ? "No background tasks."
      : ["| id | state | command |", "|---|---|---|", ...tasks.map((t) => `| ${t.id} | ${t.result ? "ended" : "running"} | \`${t.command.replaceAll("`", "'").replaceAll("\n", " ")}\` |`)].join("\n")
  )

export const make = Effect.gen(function*() {
  const bash = yield* Bash
  return Harness.of({
    ...(bash.prepare === undefined ? {} : { prepare: bash.prepare }),
    openSession: ({ additionalDirectories, cwd, restore, sessionId }) =>
      Effect.gen(function*() {
        const shell = yield* bash.session({ cwd: restore?.cwd ?? cwd, additionalDirectories })
        // The mode sets the profile only: nothing asks here (the user types the commands).
        const modes = yield* Modes.make(shell, Modes.shellModes)
        const taskCards = yield* TaskCards.make(shell)
        const tracker = yield* ChangeTracker.forSession
        let calls = 0
        // A restored session's cards were replayed under their ids: the next card takes a new one.
        const used = new Set(restore?.callIds ?? [])
        const nextCallId = () => {
          let id: string
          do id = `${sessionId}-${++calls}`
          while (used.has(id))
          return id
        }

        const startBackground = (script: string) =>
          Effect.gen(function*() {
            const args: BashArgs = { command: script, run_in_background: true }
            const changedFiles = yield* tracker.since(yield* shell.cwd)
            const task = yield* shell.start(args)
            yield* taskCards.open(nextCallId(), args, task, changedFiles)
            return `Started background task ${task.info.id}: \`/kill ${task.info.id}\` stops it, \`/jobs\` lists tasks.`
          }).pipe(Effect.catchAll((error) => Effect.succeed(`Could not start the task: ${error.message}`)))

        const prompt: HarnessSession["prompt"] = (blocks, { cancel }) => {
          const parsed = parsePrompt(blocks)
          switch (parsed._tag) {
            case "Empty":
              return message(`${parsed.reason}\n\n${HELP}`)
            case "Slash":
              if (parsed.name === "jobs") return Stream.unwrap(Effect.map(jobsTable(shell), (t) => message(t)))
              if (parsed.rest === "") return message(`\`/${parsed.name}\` needs ${parsed.name === "bg" ? "a script" : "a task id"}.\n\n${HELP}`)
              if (parsed.name === "bg") return Stream.unwrap(Effect.map(startBackground(parsed.rest), (t) => message(t)))
              return Stream.unwrap(
                shell.kill(parsed.rest).pipe(
                  Effect.match({
                    onFailure: (error) => message(error.message),
                    onSuccess: (task) => message(`Killed ${task.id}.`)
                  })
                )
              )
            case "Script": {
              const args: BashArgs = { command: parsed.script }
              return Stream.unwrap(Effect.gen(function*() {
                const cwd = yield* shell.cwd
                const call = BashTool.presentCall(args, { cwd })
                const changedFiles = yield* tracker.since(cwd)
                // This command's own Stop (a client's per-command cancel) next to the turn's: either
                // runs the kill sequence; only the turn's makes the turn `cancelled`.
                const stop = yield* Deferred.make<void>()
                const run = shell.run(args, { cancel: Effect.raceFirst(Deferred.await(cancel), Deferred.await(stop)) })
                const card = TaskCards.cardEvents(nextCallId(), args, cwd, call, run, {
                  changedFiles,
                  cancel: Deferred.complete(stop, Effect.void).pipe(Effect.asVoid)
                })
                const end = Stream.fromEffect(Effect.map(Deferred.isDone(cancel), (cancelled) =>
                  HarnessEvent.TurnEnded({ stopReason: cancelled ? "cancelled" : "end_turn" })))
                return Stream.concat(card, end)
              }))
            }
          }
        }

        const snapshot = Effect.map(shell.cwd, (cwd) => ({ cwd, memory: [] }))
        return { prompt, background: taskCards.events, commands, modes, snapshot } satisfies HarnessSession
      })
  })
})

/** The shell harness over the `Bash` service. */
export const layer: Layer.Layer<Harness, never, Bash> = Layer.effect(Harness, make)
