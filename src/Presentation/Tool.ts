/**
 * A tool owns its rendering: given its arguments and its result text, it says how it looks.
 * Both functions are pure, so any UI can re-render a call from its log.
 */
import type * as Schema from "effect/Schema"
import type { CallPresentation, ResultPresentation } from "./Presentation.js"

export interface Presenter<Args> {
  readonly presentCall: (args: Args, context: { readonly cwd: string }) => CallPresentation
  readonly presentResult: (args: Args, result: string, context: { readonly cwd: string }) => ResultPresentation
}

/** A tool as a model sees it (name, description, parameters) plus its presenter. */
export interface Tool<Args> extends Presenter<Args> {
  readonly name: string
  readonly description: string
  readonly parameters: Schema.Schema<Args, any>
}
