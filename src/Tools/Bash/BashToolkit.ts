/**
 * The bash tools for an Effect agent that runs its own `@effect/ai` loop: a `Toolkit` to merge into
 * its own (`Toolkit.merge(MyToolkit, BashToolkit)`) and a handler layer over one shell.
 *
 * These handlers return the text the model reads and nothing else: `@effect/ai` gives a handler no
 * call id and no way to stream output, so there are no live cards here. To show each command as a
 * terminal card, serve the agent through the bridge with `ModelHarness` and `BashTools.toolset`.
 */
import * as AiTool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { Bash } from "../../Bash/Bash.js"
import type { Tool } from "../Tool.js"
import { BashArgs } from "./BashArgs.js"
import * as BashTools from "./BashTools.js"
import * as TaskCards from "./TaskCards.js"

export const BashToolkit = Toolkit.make(
  AiTool.make(BashTools.BASH, { description: BashTools.BASH_DESCRIPTION, parameters: BashArgs.fields, success: Schema.String }),
  AiTool.make(BashTools.BASH_OUTPUT, { description: BashTools.BASH_OUTPUT_DESCRIPTION, parameters: BashTools.TaskArgs.fields, success: Schema.String }),
  AiTool.make(BashTools.KILL_BASH, { description: BashTools.KILL_BASH_DESCRIPTION, parameters: BashTools.TaskArgs.fields, success: Schema.String })
)

/**
 * Handlers for {@link BashToolkit} on one shell that starts in `cwd` and lives as long as the layer:
 * a `cd` persists from call to call, and background tasks die with the layer.
 */
export const layer = (options: { readonly cwd: string }) =>
  BashToolkit.toLayer(Effect.gen(function*() {
    const shell = yield* (yield* Bash).session({ cwd: options.cwd })
    const cards = yield* TaskCards.make(shell)
    // Nobody shows the task cards here; reading them keeps each task's events flowing.
    yield* Effect.forkScoped(Stream.runDrain(cards.events))
    const [bash, bashOutput, killBash] = BashTools.forShell(shell, cards) as [Tool, Tool, Tool]
    let calls = 0
    const run = (tool: Tool) => (args: unknown) =>
      Effect.map(
        tool.handle(args, { callId: `call-${++calls}`, cwd: options.cwd, output: () => Effect.void, cancel: Effect.never }),
        (outcome) => outcome.text
      )
    return BashToolkit.of({ Bash: run(bash), BashOutput: run(bashOutput), KillBash: run(killBash) })
  }))
