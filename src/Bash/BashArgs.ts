/**
 * The arguments of one bash call, as a model or a harness passes them.
 */
import * as Schema from "effect/Schema"

export const DEFAULT_TIMEOUT_MS = 120_000
export const MAX_TIMEOUT_MS = 600_000

export const BashArgs = Schema.Struct({
  command: Schema.String.annotations({ description: "The bash script to run (bash --noprofile --norc -c)." }),
  description: Schema.optionalWith(Schema.String, { exact: true }).annotations({
    description: "A short human description of what the command does; shown on the card."
  }),
  timeout_ms: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }).annotations({
    description: `Timeout in milliseconds (default ${DEFAULT_TIMEOUT_MS}, at most ${MAX_TIMEOUT_MS}; larger values are clamped).`
  }),
  workdir: Schema.optionalWith(Schema.String, { exact: true }).annotations({
    description: "Directory for this call only: absolute, or relative to the session's cwd."
  }),
  run_in_background: Schema.optionalWith(Schema.Boolean, { exact: true }).annotations({
    description: "Start as a background task owned by the session and return at once."
  })
}).annotations({ identifier: "BashArgs" })
export type BashArgs = typeof BashArgs.Type
