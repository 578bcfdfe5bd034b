#!/usr/bin/env node
// Micro-benchmark of command classification (src/Tools/Bash/Classify.ts), against the build output.
//
//   npx tsc -p tsconfig.build.json && node bench/classify.mjs          print the markdown section
//   node bench/classify.mjs --json                                    print the figures as JSON
//
// 1. Cost per command: a mix of 60 commands (reads, searches, fetches, pipes, hostile and plain
//    commands, as a model writes them), classified in a loop; µs per command, median of 9 runs.
//    Also the first call in a fresh process (nothing JIT-compiled yet).
// 2. Import cost, each in a fresh `node` and interleaved with its baseline, median of 21:
//    - unbundled: `await import("build/Tools/Bash/Classify.js")` vs importing an empty ES module;
//    - bundled as the command ships (esbuild, minified CommonJS): `require` of a bundle of the
//      module vs an empty CommonJS file. This is what it adds to the cold start when imported at
//      the top of the bundled command.
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const modulePath = join(root, "build", "Tools", "Bash", "Classify.js")
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

export const mix = [
  "cat README.md", "cat -n src/index.ts", "cat 'my file.txt' \"a b\"", "head -n 20 package.json", "tail -f /var/log/syslog",
  "less -R docs/BENCHMARKS.md", "bat -p src/bin.ts", "nl -ba f", "sed -n 120,180p src/Bash/Bash.ts", "sed -n '5p' f",
  "rg -n 'Effect.gen' src", "rg foo", "rg -t ts -e foo -e bar src test", "grep -rn TODO src", "grep -e pat f",
  "ag foo lib", "ack -i foo lib", "git grep -n classify -- src", "find . -name '*.ts' -type f", "find src -maxdepth 2",
  "fd -e ts Classify", "ls", "ls -la src/Tools", "tree -L 2 src", "curl -sSL https://example.com/api.json",
  "wget -qO- https://example.com", "cat README.md | head -5", "rg -l foo | wc -l", "ls -la | sort -k5 -n", "cat a | grep x",
  "cat a; rm -rf b", "cat $(x)", "cat `x`", "cat > f", "FOO=1 cat a", "grep x <(y)", "cat a && rm b", "cat a || true",
  "(cat a)", "cat $HOME/x", "cat *.ts", "cat a | xargs rm", "cat a 2>&1", "cat <<EOF\nhi\nEOF", "sed -i s/a/b/ f",
  "find . -delete", "curl -o f https://x", "curl file:///etc/passwd", "git status", "npm test", "npm run typecheck",
  "npx vitest run test/tools/Classify.test.ts", "git diff --stat HEAD~1", "node dist/bin.js --version", "echo hello",
  "python3 -c 'print(1)'", "make -j2 && make install", "cd src && ls", "docker ps -a", "for f in *.ts; do wc -l $f; done"
]

const perCommand = async () => {
  const { classify } = await import(pathToFileURL(modulePath).href)
  const cwd = "/work/proj"
  let sink = 0
  for (let i = 0; i < 2000; i++) for (const c of mix) sink += classify(c, cwd).locations.length // warm-up
  const rounds = 2000
  const runs = []
  for (let r = 0; r < 9; r++) {
    const t0 = performance.now()
    for (let i = 0; i < rounds; i++) for (const c of mix) sink += classify(c, cwd).locations.length
    runs.push(((performance.now() - t0) * 1000) / (rounds * mix.length))
  }
  const kinds = {}
  for (const c of mix) kinds[classify(c, cwd).kind] = (kinds[classify(c, cwd).kind] ?? 0) + 1
  return { commands: mix.length, calls: rounds * mix.length, medianUs: median(runs), minUs: Math.min(...runs), maxUs: Math.max(...runs), kinds, sink }
}

/** Runs `code` in a fresh node; it prints milliseconds. */
const fresh = (args) => Number(execFileSync(process.execPath, args, { cwd: root, encoding: "utf8" }).trim())

const importCost = async () => {
  const dir = mkdtempSync(join(tmpdir(), "classify-bench-"))
  try {
    writeFileSync(join(dir, "empty.mjs"), "export const x = 1\n")
    writeFileSync(join(dir, "empty.cjs"), "exports.x = 1\n")
    const { build } = await import("esbuild")
    await build({
      entryPoints: [join(root, "src", "Tools", "Bash", "Classify.ts")], outfile: join(dir, "classify.cjs"),
      bundle: true, platform: "node", format: "cjs", target: "node20", minify: true, logLevel: "warning"
    })
    const esm = (file) => ["--input-type=module", "-e",
      `const t0 = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); console.log(performance.now() - t0)`]
    const cjs = (file) => ["-e",
      `const t0 = performance.now(); require(${JSON.stringify(file)}); console.log(performance.now() - t0)`]
    const firstCall = ["-e", `const m = require(${JSON.stringify(join(dir, "classify.cjs"))}); ` +
      `const t0 = performance.now(); m.classify("rg -n foo src", "/"); console.log(performance.now() - t0)`]
    const s = { esm: [], esmBase: [], cjs: [], cjsBase: [], first: [] }
    for (let i = 0; i < 21; i++) {
      s.esmBase.push(fresh(esm(join(dir, "empty.mjs"))))
      s.esm.push(fresh(esm(modulePath)))
      s.cjsBase.push(fresh(cjs(join(dir, "empty.cjs"))))
      s.cjs.push(fresh(cjs(join(dir, "classify.cjs"))))
      s.first.push(fresh(firstCall))
    }
    return {
      unbundledMs: median(s.esm), unbundledBaselineMs: median(s.esmBase),
      bundledMs: median(s.cjs), bundledBaselineMs: median(s.cjsBase),
      unbundledMinMs: Math.min(...s.esm) - Math.min(...s.esmBase), bundledMinMs: Math.min(...s.cjs) - Math.min(...s.cjsBase),
      bundleBytes: statSync(join(dir, "classify.cjs")).size,
      firstCallMs: median(s.first)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const f = (x, d = 2) => x.toFixed(d)
const per = await perCommand()
const imp = await importCost()
if (process.argv.includes("--json")) {
  process.stdout.write(`${JSON.stringify({ perCommand: per, import: imp }, null, 2)}\n`)
} else {
  process.stdout.write(`## Command classification

\`classify(command, cwd)\` (\`src/Tools/Bash/Classify.ts\`, display only) over a mix of ${per.commands} commands
(${Object.entries(per.kinds).map(([k, n]) => `${n} ${k}`).join(", ")}: reads, searches, fetches, pipes, hostile
and plain commands), ${per.calls} calls per run after a warm-up, against \`build/\`.

| | value |
|---|---|
| per command, median of 9 runs | **${f(per.medianUs)} µs** (runs ${f(per.minUs)}–${f(per.maxUs)} µs; target well under 100 µs) |
| first call in a fresh process (bundled, not yet compiled) | ${f(imp.firstCallMs, 3)} ms |
| import, unbundled ESM (\`build/\`, with shell-quote) | ${f(imp.unbundledMs)} ms vs ${f(imp.unbundledBaselineMs)} ms for an empty module: **+${f(imp.unbundledMs - imp.unbundledBaselineMs)} ms** (of the minima: +${f(imp.unbundledMinMs)} ms) |
| require, bundled (esbuild, minified CJS, ${(imp.bundleBytes / 1024).toFixed(1)} KB) | ${f(imp.bundledMs)} ms vs ${f(imp.bundledBaselineMs)} ms for an empty file: **+${f(imp.bundledMs - imp.bundledBaselineMs)} ms** (of the minima: +${f(imp.bundledMinMs)} ms) |

Import figures: each in a fresh \`node\`, interleaved with its baseline, median of 21, timed inside the
process around the import alone; the first call is timed separately. Rerun: \`npx tsc -p tsconfig.build.json && node bench/classify.mjs\`.
`)
}
