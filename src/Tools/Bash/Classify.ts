/**
 * Command classification, display only (spec: presentation.md, "Command classification"): tells
 * the editor that a bash command is a plain read, search or fetch, and which files it names, so a
 * card can say so. It never changes what runs; whenever it is not clearly one simple read-only
 * command (optionally piped into one pure filter) the answer is `execute`.
 *
 * Two stages:
 * 1. `prescan` walks the raw text with bash's quoting rules and rejects everything beyond a simple
 *    command: unquoted `;` `&` `<` `>` `(` `)` `{` `}` `` ` `` `$` (also `$`/`` ` `` inside double
 *    quotes), globs `*` `?` `[`, `~`, newlines and other control characters, more than one `|`.
 *    This is needed because shell-quote silently misreads many of them: `$HOME/x` becomes `/x`
 *    (it expands variables from an empty env), `` `x` `` and `"$(x)"` stay words, `a#b` becomes a
 *    comment, `{` and `2` of `2>&1` become words, `[ab]` is not a glob, a no-break space splits.
 * 2. shell-quote (a maintained tokenizer, 10 KB, sync) then does the quote removal and word
 *    splitting of what is left, which is only words, quotes, backslashes and at most one `|`.
 *
 * Paths are resolved against the call's cwd (which must be absolute, else `execute`). Words with
 * `~` are `execute`: the home directory of the bash that runs is not known here.
 */
import { isAbsolute, resolve } from "node:path"
// The deep import loads only the parser (not `quote`) and avoids the package's index.d.ts, which
// augments the global Array.join type.
import parse from "shell-quote/parse.js"
import { isFilter, lookup } from "./CommandTable.js"

export type CommandKind = "read" | "search" | "fetch" | "execute"

export interface Location {
  readonly path: string
  readonly line?: number
}

export interface Classification {
  readonly kind: CommandKind
  readonly locations: ReadonlyArray<Location>
}

const execute: Classification = Object.freeze({ kind: "execute", locations: Object.freeze([]) })

/** Characters that make a command more than one simple command when unquoted. */
const unquotedStop = new Set([";", "&", "<", ">", "(", ")", "{", "}", "$", "`", "*", "?", "[", "~"])

/**
 * The command without a trailing comment, or undefined when something in it is beyond a simple
 * command with at most one pipe (see the module comment).
 */
const prescan = (s: string): string | undefined => {
  let quote: "'" | "\"" | undefined
  let wordStart = true
  let pipes = 0
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!
    const code = s.charCodeAt(i)
    // Newlines separate commands; other control characters are read differently by bash and the
    // tokenizer (which splits on \r, \v, \f).
    if ((code < 0x20 && c !== "\t") || code === 0x7f) return undefined
    if (quote === "'") {
      if (c === "'") quote = undefined
    } else if (quote === "\"") {
      if (c === "\"") quote = undefined
      else if (c === "$" || c === "`") return undefined
      else if (c === "\\") {
        // Skip the escaped character, but it must not be one the two read differently.
        const next = s.charCodeAt(++i)
        if (Number.isNaN(next) || next < 0x20 || next === 0x60) return undefined
      }
    } else if (c === "'" || c === "\"") {
      quote = c
      wordStart = false
    } else if (c === "\\") {
      const next = s[++i]
      if (next === undefined || next.charCodeAt(0) < 0x20 || (next !== " " && next !== "\t" && /\s/.test(next))) {
        return undefined
      }
      wordStart = false
    } else if (c === " " || c === "\t") {
      wordStart = true
    } else if (c === "#") {
      // A comment starts only at a word's start; shell-quote also starts one mid-word (`a#b`).
      if (!wordStart) return undefined
      return s.slice(0, i)
    } else if (c === "|") {
      if (s[i + 1] === "|" || s[i + 1] === "&" || ++pipes > 1) return undefined
      wordStart = true
    } else if (unquotedStop.has(c)) {
      return undefined
    } else if (code > 0x7f && /\s/.test(c)) {
      // Unicode spaces: part of a word for bash, a word break for shell-quote.
      return undefined
    } else {
      wordStart = false
    }
  }
  return quote === undefined ? s : undefined
}

/** Only what bash itself skips at the ends (String.trim would also drop \r and no-break spaces). */
const trimBlanks = (s: string) => {
  const blank = (c: string | undefined) => c === " " || c === "\t" || c === "\n"
  let start = 0
  let end = s.length
  while (start < end && blank(s[start])) start++
  while (end > start && blank(s[end - 1])) end--
  return s.slice(start, end)
}

/**
 * The class of `command` as bash would run it in `cwd`, with one location per file or directory
 * it names. Pure, synchronous, never throws: anything unexpected is `execute`.
 */
export const classify = (command: string, cwd: string): Classification => {
  try {
    if (!isAbsolute(cwd)) return execute
    const text = prescan(trimBlanks(command))
    if (text === undefined) return execute
    const tokens = parse(text)
    // After the prescan only words and one `|` can remain; anything else means a misreading.
    const stages: Array<Array<string>> = [[]]
    for (const t of tokens) {
      if (typeof t === "string") stages[stages.length - 1]!.push(t)
      else if ("op" in t && t.op === "|") stages.push([])
      else return execute
    }
    const [first, filter] = stages
    const found = first && lookup(first)
    if (!found) return execute
    if (filter !== undefined && !isFilter(filter)) return execute
    const seen = new Set<string>()
    const locations: Array<Location> = []
    for (const p of found.paths) {
      const path = resolve(cwd, p)
      if (seen.has(path)) continue
      seen.add(path)
      locations.push(found.line === undefined ? { path } : { path, line: found.line })
    }
    return { kind: found.kind, locations }
  } catch {
    return execute
  }
}
