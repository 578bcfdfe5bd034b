/**
 * ANSI escape sequences, removed from a command's output wherever it is shown as plain text (the
 * model's text, the Markdown fallback of a terminal card). One grammar for both, so the two never
 * disagree about what an escape is.
 */

/**
 * CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ESC \`, cut at a newline, the next ESC or 8-bit CSI when
 * unterminated), the other ESC sequences (`ESC (B`, `ESC 7`, `ESC =`, `ESC #8`, two-byte Fe …),
 * 8-bit CSI, and a bare ESC left over.
 */
const SEQUENCE = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\x9b\n]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]|\x1b|\x9b[0-?]*[ -/]*[@-~]/g

/** Removes ANSI escape sequences (colours, cursor moves, hyperlinks, charset switches). */
export const stripAnsi = (text: string): string =>
  text.indexOf("\x1b") < 0 && text.indexOf("\x9b") < 0 ? text : text.replace(SEQUENCE, "")

/** A sequence anchored at ESC / 8-bit CSI that more input cannot change (an OSC needs its terminator). */
// (`ESC [` and `ESC ]` alone are the start of a CSI / OSC here, not a two-byte escape.)
const COMPLETE_AT = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\x9b\n]*[\x07\n]|[ -/]+[0-~]|[0-Z\\^-~])|\x9b[0-?]*[ -/]*[@-~]/y
/** What may still become a longer sequence if more bytes come. */
const PREFIX_AT = /(?:\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b\x9b\n]*|[ -/]*)?|\x9b[0-?]*[ -/]*)$/y
const MAX_CARRY = 4096

/**
 * {@link stripAnsi} over a stream of chunks: a sequence split across chunks is still removed, and
 * the result equals stripping the whole text at once.
 */
export class AnsiStripper {
  private carry = ""

  push(chunk: string): string {
    // Most chunks hold no escape at all: two `indexOf` (fast) instead of two `lastIndexOf` (a
    // character-by-character loop in V8) over the whole chunk.
    if (this.carry === "" && chunk.indexOf("\x1b") < 0 && chunk.indexOf("\x9b") < 0) return chunk
    let text = this.carry + chunk
    this.carry = ""
    const at = Math.max(text.lastIndexOf("\x1b"), text.lastIndexOf("\x9b"))
    if (at >= 0 && text.length - at < MAX_CARRY) {
      COMPLETE_AT.lastIndex = at
      if (!COMPLETE_AT.test(text)) {
        PREFIX_AT.lastIndex = at
        if (PREFIX_AT.test(text)) {
          this.carry = text.slice(at)
          text = text.slice(0, at)
        }
      }
    }
    return stripAnsi(text)
  }

  /** Nothing is held back (the start of a sequence split across chunks). */
  get idle(): boolean {
    return this.carry === ""
  }

  flush(): string {
    const rest = stripAnsi(this.carry)
    this.carry = ""
    return rest
  }
}
