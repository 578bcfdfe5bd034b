/**
 * The arguments of one bash call, as a model or a harness passes them: the executor's `RunRequest`
 * plus a description for the card, each field described for the model.
 */
import * as Schema from "effect/Schema"
import { DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS } from "../../Bash/Bash.js"

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
export { DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS }
