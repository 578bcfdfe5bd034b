/** Opening a model-harness session over real bash and a scripted model, and reading its events. */
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as BashLive from "../../src/Bash/BashLive.js"
import { Harness, type HarnessSession, type PermissionDecision, type PromptBlock } from "../../src/Harness/Harness.js"
import type { HarnessEvent } from "../../src/Harness/HarnessEvent.js"
import * as ModelHarness from "../../src/Harness/ModelHarness.js"
import type { CallIntent } from "../../src/Presentation/Intent.js"
import { scripted, type Scripted, type Step } from "../support/scriptedModel.js"

export interface Opened {
  readonly session: HarnessSession
  readonly model: Scripted
  readonly cwd: string
  /** Every permission request, in order. */
  readonly asked: Array<{ callId: string; presentation: CallIntent }>
}

/**
 * Opens a session in a fresh temporary directory; `decide` answers permission requests (default:
 * allow once). The harness, the executor and the session live in the test's scope.
 */
export const open = (
  steps: ReadonlyArray<Step>,
  options: {
    readonly harness?: ModelHarness.Options
    readonly decide?: (request: { callId: string; presentation: CallIntent }) => Effect.Effect<PermissionDecision>
  } = {}
): Effect.Effect<Opened, never, Scope.Scope> =>
  Effect.gen(function*() {
    const model = scripted(steps)
    const context = yield* Layer.build(
      ModelHarness.layer(options.harness).pipe(Layer.provide(Layer.merge(BashLive.layer(), model.layer)))
    )
    const harness = Context.get(context, Harness)
    const cwd = mkdtempSync(join(tmpdir(), "dsh-model-"))
    const asked: Opened["asked"] = []
    const session = yield* harness.openSession({
      sessionId: "s1",
      cwd,
      client: {
        requestPermission: (request) =>
          Effect.suspend(() => {
            asked.push(request)
            return options.decide ? options.decide(request) : Effect.succeed("allow_once" as const)
          })
      }
    })
    return { session, model, cwd, asked }
  })

export const text = (value: string): ReadonlyArray<PromptBlock> => [{ _tag: "Text", text: value }]

/** Runs one turn to its end; `onEvent` sees each event as it arrives (e.g. to cancel). */
export const turn = (
  session: HarnessSession,
  prompt: string,
  onEvent?: (event: HarnessEvent, cancel: Deferred.Deferred<void>) => Effect.Effect<void>
): Effect.Effect<ReadonlyArray<HarnessEvent>> =>
  Effect.gen(function*() {
    const cancel = yield* Deferred.make<void>()
    const events = session.prompt(text(prompt), { cancel }).pipe(
      Stream.tap((event) => (onEvent ? onEvent(event, cancel) : Effect.void))
    )
    return Chunk.toReadonlyArray(yield* Stream.runCollect(events))
  })

export const tags = (events: ReadonlyArray<HarnessEvent>) => events.map((e) => e._tag)

export const agentText = (events: ReadonlyArray<HarnessEvent>) =>
  events.flatMap((e) => (e._tag === "AgentText" ? [e.text] : [])).join("")

export const lastEvent = (events: ReadonlyArray<HarnessEvent>) => events.at(-1)

/** Live (non-zombie) processes whose argv joined by spaces is exactly `cmdline`. */
export const processesRunning = (cmdline: string): Array<number> => {
  const found: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").trim() !== cmdline) continue
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
      if (state !== "Z" && state !== "X") found.push(Number(entry))
    } catch {
      // the process ended while we looked
    }
  }
  return found
}
