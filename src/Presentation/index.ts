export * as Presentation from "./Presentation.js"
export * as Tool from "./Tool.js"
