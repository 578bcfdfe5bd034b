/** Leaves shared by the executor and the presentation vocabulary: how a process ended, ANSI escapes. */
export * as Ansi from "./Ansi.js"
export * as ExitStatus from "./ExitStatus.js"
