/**
 * Keeping a repository's filters from running in our git (see {@link neutralisedFilters}).
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Git, GitError } from "./Git.js"

/**
 * `git status` runs a repository's clean filters (`filter.<name>.clean`/`.process`, chosen by
 * `.gitattributes`) on files whose stat changed. The repository's config is writable by the
 * commands we compare (a sandboxed one too, in the workspace profile, or one that ran `git init`),
 * and our git runs outside any sandbox: so every filter the repository's config names is switched
 * off for our status. The user's global and system config are theirs, not a command's.
 */
const offArgs = (names: Iterable<string>): ReadonlyArray<string> =>
  [...names].flatMap((name) =>
    ["clean", "smudge", "process"].flatMap((what) => ["-c", `filter.${name}.${what}=`]).concat(["-c", `filter.${name}.required=false`])
  )

/** Every `[filter "name"]` (or `[filter.name]`) section a config text names; extra names are harmless. */
export const filterSections = (text: string): Set<string> => {
  const names = new Set<string>()
  for (const m of text.matchAll(/\[\s*filter\s*(?:"((?:[^"\\\n]|\\.)*)"|\.([^\]\s]+))\s*\]/gi)) {
    names.add(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!)
  }
  return names
}

/**
 * The filter names from reading `.git/config` (and `config.worktree`) directly: no process on
 * the hot path. Undefined when that is not the whole story (a `.git` file pointing elsewhere, an
 * `include`): then git itself lists the config, which executes nothing.
 */
const filtersFromFiles = (root: string): ReadonlyArray<string> | undefined => {
  try {
    const gitDir = path.join(root, ".git")
    if (!fs.statSync(gitDir).isDirectory()) return undefined
    const texts = ["config", "config.worktree"].map((name) => {
      try {
        return fs.readFileSync(path.join(gitDir, name), "utf8")
      } catch {
        return ""
      }
    })
    if (texts.some((t) => /include/i.test(t))) return undefined
    return offArgs(new Set(texts.flatMap((t) => [...filterSections(t)])))
  } catch {
    return undefined
  }
}

const filtersFromGit = (git: Git, root: string): Effect.Effect<ReadonlyArray<string>, GitError> =>
  Effect.map(git.run(root, ["config", "--local", "--includes", "-z", "--list"], { maxBytes: 1024 * 1024 }), (out) => {
    const names = new Set<string>()
    for (const record of out.toString("utf8").split("\0")) {
      const key = record.slice(0, record.indexOf("\n") < 0 ? record.length : record.indexOf("\n"))
      const match = /^filter\.(.+)\.[^.]+$/.exec(key)
      if (match) names.add(match[1]!)
    }
    return offArgs(names)
  })

export const neutralisedFilters = (git: Git, root: string): Effect.Effect<ReadonlyArray<string>, GitError> =>
  Effect.suspend(() => {
    const fromFiles = filtersFromFiles(root)
    return fromFiles !== undefined ? Effect.succeed(fromFiles) : filtersFromGit(git, root)
  })
