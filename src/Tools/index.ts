/** Tools: the seam (`Tool`, `Toolset`) and the bash tools, one set among others. */
export * as Tool from "./Tool.js"
export * as BashArgs from "./Bash/BashArgs.js"
export * as BashTool from "./Bash/BashTool.js"
export * as BashTools from "./Bash/BashTools.js"
export * as Classify from "./Bash/Classify.js"
export * as TaskCards from "./Bash/TaskCards.js"
export * as BashToolkit from "./Bash/BashToolkit.js"
