/**
 * The bash executor's public contract: the service and its types, the live layer, the
 * status-line Schema, the environment scrub, the sandbox profiles. Its parts (`ChildProcess`,
 * `Containment`, `OutputPump`, `OutputBudget`) are internal.
 */
export * as Bash from "./Bash.js"
export * as BashLive from "./BashLive.js"
export * as EnvScrub from "./EnvScrub.js"
export * as StatusLines from "./StatusLines.js"
export * as Sandbox from "./Sandbox.js"
