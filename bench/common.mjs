// What the benchmark scripts share: the command line, and their sections of docs/BENCHMARKS.md.
import { readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

/** The checkout the scripts run from (the parent of bench/). */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")

/** `flag("--short")` is whether it was given; `value("--agent")` is the argument after it, if any. */
export const commandLine = (argv = process.argv.slice(2)) => ({
  argv,
  flag: (name) => argv.includes(name),
  value: (name) => {
    const i = argv.indexOf(name)
    return i >= 0 ? argv[i + 1] : undefined
  }
})

/** A hand-run script's section: between `<!-- NAME:start -->` and `<!-- NAME:end -->`, which bench/run.mjs keeps. */
export const sectionMarkers = (name) => ({ start: `<!-- ${name}:start -->`, end: `<!-- ${name}:end -->` })

/** Replaces the section `name` of docs/BENCHMARKS.md with `section` (its markers included), or appends it. */
export const writeSection = (name, section) => {
  const { start: START, end: END } = sectionMarkers(name)
  const file = join(root, "docs", "BENCHMARKS.md")
  const text = readFileSync(file, "utf8")
  const start = text.indexOf(START)
  const end = text.indexOf(END)
  const next = start >= 0 && end > start
    ? text.slice(0, start) + section + text.slice(end + END.length + 1)
    : text.replace(/\n*$/, "\n\n") + section
  writeFileSync(file, next)
}
