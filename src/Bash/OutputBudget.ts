/**
 * The model-facing budget of a command's output, computed while the output streams.
 *
 * A command may print gigabytes; the model gets at most `maxChars` characters of it: ANSI escapes
 * stripped, `\r` progress rewrites resolved as a terminal would show them, then the first third
 * (head) and the last two thirds (tail) cut at line boundaries. When that cut loses anything, the
 * exact bytes the command wrote are kept in a file (mode 0600, capped) the model can read later.
 *
 * Memory is bounded whatever the command prints: every stage keeps at most a budget's worth of
 * text (plus one overlong line, plus a small spill buffer before the file is opened). The text side
 * is `ModelText`, the file `FullOutput`.
 */
import { FullOutput } from "./FullOutput.js"
import { ModelText } from "./ModelText.js"
import type { Truncation } from "./StatusLines.js"

export interface BudgetOptions {
  readonly maxChars: number
  readonly fullOutputMaxBytes: number
  /** Where the full-output file goes. */
  readonly tempDir: string
}

export interface BudgetResult {
  /** The model text, ready for `StatusLines.toOutputText`. */
  readonly output: string
  readonly truncated?: Truncation
}

/**
 * Both sides of the output budget, fed the output chunk by chunk as whole UTF-8 characters (see the
 * executor's output events): as they are for the file, as text for the model.
 */
export class OutputBudget {
  private readonly model: ModelText
  private readonly full: FullOutput

  constructor(options: BudgetOptions) {
    this.model = new ModelText(options.maxChars)
    this.full = new FullOutput(options.tempDir, options.fullOutputMaxBytes)
  }

  write(bytes: Uint8Array): void {
    this.full.write(bytes)
    this.model.pushBytes(bytes)
  }

  finish(): BudgetResult {
    const { omittedChars, text } = this.model.finish()
    const savedTo = this.full.finish(omittedChars > 0)
    if (omittedChars === 0) return { output: text }
    return { output: text, truncated: savedTo === undefined ? { omittedChars } : { omittedChars, savedTo } }
  }

  /** Releases the full-output file of a call that never reached `finish` (a no-op after it). */
  abort(): void {
    this.full.abort()
  }
}
