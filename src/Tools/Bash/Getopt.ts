/**
 * The options and operands of one command's words, read as GNU getopt_long reads them, against a
 * whitelist of the options the command accepts (see `CommandTable.ts`, its only user).
 */

/** One option as given: its short letter or long name (a long name with a short twin gets the letter). */
interface Opt {
  readonly name: string
  readonly value: string | undefined
}

export interface Parsed {
  readonly opts: ReadonlyArray<Opt>
  readonly operands: ReadonlyArray<string>
}

type LongKind = "flag" | "value" | "optional"
type LongOptions = ReadonlyMap<string, { readonly kind: LongKind; readonly short: string | undefined }>

export interface OptionSpec {
  readonly flags: string
  readonly valued: string
  readonly longFlags: string
  readonly longValued: string
  /** `-NUM` is an option (`head -5`, `grep -3`). */
  readonly numeric: boolean
}

/**
 * Short letters without and with a value; long names space-separated, `name=x` when it is the same
 * option as `-x`, `name?` when it takes a value only after `=` (`--color=auto`). Only the strings
 * are kept at import: building every table then cost ~1 ms of a cold start.
 */
export const spec = (flags: string, valued: string, longFlags = "", longValued = "", numeric = false): OptionSpec =>
  ({ flags, valued, longFlags, longValued, numeric })

const longCache = new WeakMap<OptionSpec, LongOptions>()
const longOptions = (s: OptionSpec): LongOptions => {
  let long = longCache.get(s)
  if (long !== undefined) return long
  const built = new Map<string, { kind: LongKind; short: string | undefined }>()
  const add = (list: string, kind: LongKind) => {
    for (const entry of list.split(" ")) {
      if (entry === "") continue
      const optional = entry.endsWith("?")
      const [name = "", short] = (optional ? entry.slice(0, -1) : entry).split("=")
      built.set(name, { kind: optional ? "optional" : kind, short })
    }
  }
  add(s.longFlags, "flag")
  add(s.longValued, "value")
  longCache.set(s, long = built)
  return long
}

/**
 * getopt_long as GNU tools read it (options may follow operands; `--` ends them). Undefined for
 * an option the spec does not list or a value that is missing.
 */
export const getopt = (words: ReadonlyArray<string>, s: OptionSpec): Parsed | undefined => {
  const opts: Array<Opt> = []
  const operands: Array<string> = []
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!
    if (w === "--") {
      operands.push(...words.slice(i + 1))
      break
    }
    if (w.length < 2 || w[0] !== "-") {
      operands.push(w)
    } else if (w[1] === "-") {
      const eq = w.indexOf("=")
      const name = eq < 0 ? w.slice(2) : w.slice(2, eq)
      const o = longOptions(s).get(name)
      if (o === undefined) return undefined
      let value = eq < 0 ? undefined : w.slice(eq + 1)
      if (o.kind === "flag" && value !== undefined) return undefined
      if (o.kind === "value" && value === undefined) {
        if (++i >= words.length) return undefined
        value = words[i]
      }
      opts.push({ name: o.short ?? name, value })
    } else if (s.numeric && /^-[0-9]+$/.test(w)) {
      opts.push({ name: "NUM", value: w.slice(1) })
    } else {
      for (let j = 1; j < w.length; j++) {
        const c = w[j]!
        if (s.flags.includes(c)) {
          opts.push({ name: c, value: undefined })
        } else if (s.valued.includes(c)) {
          let value = w.slice(j + 1)
          if (value === "") {
            if (++i >= words.length) return undefined
            value = words[i]!
          }
          opts.push({ name: c, value })
          break
        } else {
          return undefined
        }
      }
    }
  }
  return { opts, operands }
}

export const has = (p: Parsed, ...names: ReadonlyArray<string>) => p.opts.some((o) => names.includes(o.name))
export const values = (p: Parsed, name: string) => p.opts.filter((o) => o.name === name).map((o) => o.value ?? "")

/** A file operand we can name: not stdin (`-`), not empty. */
export const namedFiles = (operands: ReadonlyArray<string>) =>
  operands.length > 0 && operands.every((o) => o !== "" && o !== "-") ? operands : undefined
