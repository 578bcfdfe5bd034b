/** The harness seam: the events a harness emits, its interface, the default shell harness and the model harness. */
export * as Harness from "./Harness.js"
export * as HarnessEvent from "./HarnessEvent.js"
/** The model-driven harness: `ModelHarness.layer(options)` over a toolset (the bash tools by default) and any `LanguageModel`. */
export * as ModelHarness from "./ModelHarness.js"
/** A session's tools as the model sees them, and the validation of its calls. */
export * as ModelTools from "./ModelTools.js"
/** Session modes (what commands may touch, whether they ask) over the executor's sandbox profiles. */
export * as Modes from "./Modes.js"
export * as ShellHarness from "./ShellHarness.js"
/** The model harness's default system prompt and the facts it is built from. */
export * as SystemPrompt from "./SystemPrompt.js"
