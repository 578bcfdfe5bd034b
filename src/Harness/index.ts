/** The harness seam: the events a harness emits, its interface, and the default shell harness. */
export * as Harness from "./Harness.js"
export * as HarnessEvent from "./HarnessEvent.js"
export * as ShellHarness from "./ShellHarness.js"
