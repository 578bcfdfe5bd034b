/**
 * dsh-acp as a library: the bash executor, the tools seam and the bash tools, the presentation
 * vocabulary (render intents), the harness seam and the ACP bridge, for Effect-based agents that
 * bring their own harness, model or tools.
 *
 * ```ts
 * import { Bash, Bridge, Harness } from "dsh-acp"
 * Bridge.Server.serveStdio({ agentInfo: { name: "my-agent", title: "Mine", version: "1.0.0" } }).pipe(
 *   Effect.provide(Harness.ShellHarness.layer),   // or your own `Harness` layer
 *   Effect.provide(Bash.BashLive.layer())
 * )
 * ```
 */
export * as Bash from "./Bash/index.js"
export * as Bridge from "./Bridge/index.js"
export * as Harness from "./Harness/index.js"
export * as Presentation from "./Presentation/index.js"
export * as Terminal from "./Terminal/index.js"
export * as Tools from "./Tools/index.js"
export * as Model from "./Model/index.js"
