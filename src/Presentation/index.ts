export * as CardEvent from "./CardEvent.js"
export * as Intent from "./Intent.js"
