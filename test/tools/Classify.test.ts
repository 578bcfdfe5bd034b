import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { resolve } from "node:path"
import { classify, type CommandKind, type Location } from "../../src/Tools/Bash/Classify.js"

const cwd = "/work/proj"
const at = (path: string, line?: number): Location =>
  line === undefined ? { path: resolve(cwd, path) } : { path: resolve(cwd, path), line }

type Row = readonly [command: string, kind: CommandKind, locations?: ReadonlyArray<Location>]

const rows: ReadonlyArray<Row> = [
  // read
  ["cat a", "read", [at("a")]],
  ["cat -n src/index.ts", "read", [at("src/index.ts")]],
  ["cat a b ../c /etc/hosts", "read", [at("a"), at("b"), at("../c"), { path: "/etc/hosts" }]],
  ["cat a a", "read", [at("a")]],
  ["cat -- -weird", "read", [at("-weird")]],
  ["head -n 20 f", "read", [at("f")]],
  ["head -20 f", "read", [at("f")]],
  ["head --lines=5 f", "read", [at("f")]],
  ["tail -f log", "read", [at("log")]],
  ["tail -n +5 log.txt", "read", [at("log.txt")]],
  ["less -R f", "read", [at("f")]],
  ["more f", "read", [at("f")]],
  ["bat -p f.ts", "read", [at("f.ts")]],
  ["bat -r 10:20 f", "read", [at("f", 10)]],
  ["nl -ba f", "read", [at("f")]],
  ["sed -n 5,10p f", "read", [at("f", 5)]],
  ["sed -n '5p' f", "read", [at("f", 5)]],
  ["sed -n -e 7,9p f", "read", [at("f", 7)]],
  ["sed -n 5p f g", "read", [at("f"), at("g")]],
  // quoting, unicode, spaces
  ["cat 'my file.txt'", "read", [at("my file.txt")]],
  ["cat \"a b\"", "read", [at("a b")]],
  ["cat a\\ b", "read", [at("a b")]],
  ["cat \"it's\" 'say \"hi\"'", "read", [at("it's"), at("say \"hi\"")]],
  ["cat 'a;b' \"c|d\" 'e$f' '*.ts'", "read", [at("a;b"), at("c|d"), at("e$f"), at("*.ts")]],
  ["cat données/résumé.md 日本語.txt", "read", [at("données/résumé.md"), at("日本語.txt")]],
  ["  cat   a  ", "read", [at("a")]],
  ["cat a # show it", "read", [at("a")]],
  ["'cat' a", "read", [at("a")]],
  // search
  ["rg foo src", "search", [at("src")]],
  ["rg foo", "search", []],
  ["rg -t ts foo src test", "search", [at("src"), at("test")]],
  ["rg -n -e foo -e bar src", "search", [at("src")]],
  ["rg --files src", "search", [at("src")]],
  ["grep -rn pattern src", "search", [at("src")]],
  ["grep -e pat f", "search", [at("f")]],
  ["grep -r x", "search", []],
  ["grep -C3 'a|b' f g", "search", [at("f"), at("g")]],
  ["ag foo lib", "search", [at("lib")]],
  ["ack -i foo lib", "search", [at("lib")]],
  ["git grep x", "search", []],
  ["git grep -n x -- src", "search", [at("src")]],
  ["git --no-pager grep -i x lib", "search", [at("lib")]],
  ["find . -name '*.ts'", "search", [at(".")]],
  ["find src test -type f -name \"*.md\" -maxdepth 2", "search", [at("src"), at("test")]],
  ["find", "search", []],
  ["fd -e ts foo src", "search", [at("src")]],
  ["ls", "search", []],
  ["ls -la dir", "search", [at("dir")]],
  ["ls --color=never -1 a b", "search", [at("a"), at("b")]],
  ["tree -L 2 src", "search", [at("src")]],
  // fetch
  ["curl https://example.com", "fetch", []],
  ["curl -sSL https://example.com/x.json", "fetch", []],
  ["curl -H 'Accept: text/plain' http://example.com", "fetch", []],
  ["wget -qO- https://example.com", "fetch", []],
  // one pipe into a pure filter keeps the class
  ["cat README.md | head -5", "read", [at("README.md")]],
  ["cat a | grep x", "read", [at("a")]],
  ["rg -l foo | wc -l", "search", []],
  ["ls -la | sort -k5 -n", "search", []],
  ["curl -s https://x.org | head -c 100", "fetch", []],
  ["grep -h x f|uniq -c", "search", [at("f")]],
  // hostile / not a simple read: execute
  ["cat a; rm -rf b", "execute"],
  ["cat $(x)", "execute"],
  ["cat `x`", "execute"],
  ["cat \"$(x)\"", "execute"],
  ["cat \"`x`\"", "execute"],
  ["cat > f", "execute"],
  ["cat < f", "execute"],
  ["cat a >> f", "execute"],
  ["FOO=1 cat a", "execute"],
  ["grep x <(y)", "execute"],
  ["cat a && rm b", "execute"],
  ["cat a || true", "execute"],
  ["cat a &", "execute"],
  ["cat a |& head", "execute"],
  ["(cat a)", "execute"],
  ["{ cat a; }", "execute"],
  ["cat $HOME/x", "execute"],
  ["cat \"$HOME/x\"", "execute"],
  ["cat ${X}", "execute"],
  ["cat $'a\\nb'", "execute"],
  ["cat ~/x", "execute"],
  ["cat *.ts", "execute"],
  ["cat a?", "execute"],
  ["cat [ab]", "execute"],
  ["cat {a,b}", "execute"],
  ["cat a\\*", "execute"],
  ["cat a | sh", "execute"],
  ["cat a | xargs rm", "execute"],
  ["cat a | head | wc -l", "execute"],
  ["cat a | sort -o out", "execute"],
  ["cat a | uniq - out", "execute"],
  ["cat a | grep x b", "execute"],
  ["cat a | tee b", "execute"],
  ["cat a 2>&1", "execute"],
  ["cat a 2>/dev/null", "execute"],
  ["cat <<EOF\nhi\nEOF", "execute"],
  ["cat <<< hi", "execute"],
  ["cat a\ncat b", "execute"],
  ["cat a\nrm b", "execute"],
  ["cat a\r", "execute"],
  ["cat a\\\nb", "execute"],
  ["cat a#b", "execute"],
  ["cat a\u00a0b", "execute"],
  ["cat 'unterminated", "execute"],
  ["cat", "execute"],
  ["cat -", "execute"],
  ["cat ''", "execute"],
  ["cat --bogus a", "execute"],
  ["/bin/cat a", "execute"],
  ["sudo cat a", "execute"],
  ["time cat a", "execute"],
  ["sed -i s/a/b/ f", "execute"],
  ["sed -n -i 5p f", "execute"],
  ["sed s/a/b/ f", "execute"],
  ["sed -n '5p;6q' f", "execute"],
  ["sed -n 5p", "execute"],
  ["less +F f", "execute"],
  ["grep x", "execute"],
  ["rg --pre sh foo src", "execute"],
  ["git status", "execute"],
  ["git -C x grep y", "execute"],
  ["git grep -O x", "execute"],
  ["find . -delete", "execute"],
  ["find . -name x -exec rm {} \\;", "execute"],
  ["find . -name x -execdir rm '{}' +", "execute"],
  ["find . -fprint out", "execute"],
  ["fd -x rm", "execute"],
  ["tree -o out.txt", "execute"],
  ["curl -o f https://x", "execute"],
  ["curl -O https://x/f", "execute"],
  ["curl -d a=b https://x", "execute"],
  ["curl -X POST https://x", "execute"],
  ["curl file:///etc/passwd", "execute"],
  ["curl example.com", "execute"],
  ["wget https://x", "execute"],
  ["wget -O f https://x", "execute"],
  ["echo hi", "execute"],
  ["npm test", "execute"],
  ["", "execute"],
  ["   \t ", "execute"],
  ["# just a comment", "execute"],
  ["! cat a", "execute"]
]

describe("classify", () => {
  it("has a large table", () => {
    expect(rows.length).toBeGreaterThanOrEqual(60)
  })

  const cases = rows.map(([command, kind, locations = []]) => ({ command, kind, locations }))
  it.each(cases)("$command → $kind", ({ command, kind, locations }) => {
    expect(classify(command, cwd)).toEqual({ kind, locations })
  })

  it("a relative cwd cannot be resolved purely: execute", () => {
    expect(classify("cat a", "rel/dir")).toEqual({ kind: "execute", locations: [] })
  })
})

// ---------------------------------------------------------------------------------------------
// Properties

/** File names with unicode, spaces and shell metacharacters, quoted for bash with single quotes. */
const fileName = FastCheck.array(
  FastCheck.oneof(
    FastCheck.constantFrom("a", "b", "Z", "0", ".", "_", "/", "é", "ß", "日", "ä", "🙂", " ", "'", "\"", ";", "$", "*", "|", "&", "(", "#"),
    FastCheck.string({ minLength: 1, maxLength: 3 }).filter((s) => !/[\x00-\x1f\x7f]/.test(s))
  ),
  { minLength: 1, maxLength: 8 }
).map((parts) => parts.join("")).filter((s) => !s.startsWith("-") && !s.startsWith("+"))

const singleQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`

/** Commands that are read/search/fetch given one file operand (fetch gets a URL instead). */
const firstWords = ["cat", "cat -n", "head -n 5", "tail", "less", "bat -p", "nl", "sed -n 3p", "sed -n 2,4p", "rg foo", "grep -n foo", "ls -la", "find", "tree", "fd x"]

const operators = [";", "&", "&&", "||", "<", ">", ">>", "2>&1", "$", "$(", "`", "(", ")", "{", "}", "<(", "|&", "\n"]
/** Anything after a pipe that is not a pure filter. */
const nonFilters = ["sh", "bash -c", "xargs rm", "tee out", "python3", "node", ""]

const structured = FastCheck.record({
  first: FastCheck.constantFrom(...firstWords, "curl -s"),
  file: fileName,
  url: FastCheck.webUrl(),
  op: FastCheck.oneof(
    FastCheck.constantFrom(...operators),
    FastCheck.constantFrom(...nonFilters).map((w) => `| ${w}`)
  ),
  tail: FastCheck.string(),
  where: FastCheck.nat(2),
  glue: FastCheck.constantFrom(" ", "")
})

const build = ({ first, file, url, op, tail, where, glue }: typeof structured extends FastCheck.Arbitrary<infer T> ? T : never) => {
  const operand = singleQuote(first === "curl -s" ? url : file)
  const base = `${first} ${operand}`
  const parts = [first, operand]
  // A newline before everything is only an empty line: bash runs the command after it.
  parts.splice(op === "\n" && where === 0 ? 1 : where, 0, op)
  // Something always follows, so a trailing `\n` or `|` is not the harmless end of the text.
  const hostile = `${parts.join(glue)} x${tail}`
  return { base, hostile }
}

describe("classify properties", () => {
  it.prop("never throws, and always answers a known kind with locations", [FastCheck.oneof(
    FastCheck.string({ unit: "binary" }),
    FastCheck.array(FastCheck.constantFrom("cat", "rg", "sed", "-n", "5p", "'", "\"", "\\", "|", "#", "$", "a", " ", "\n", "${", "}", "(", "--", "=", "~", "é"))
      .map((xs) => xs.join(""))
  )], ([s]) => {
    const c = classify(s, cwd)
    expect(["read", "search", "fetch", "execute"]).toContain(c.kind)
    expect(Array.isArray(c.locations)).toBe(true)
  }, { fastCheck: { numRuns: 3000 } })

  it.prop("a quoted file name of any characters is read as that one file", [fileName], ([name]) => {
    expect(classify(`cat ${singleQuote(name)}`, cwd)).toEqual({ kind: "read", locations: [{ path: resolve(cwd, name) }] })
  }, { fastCheck: { numRuns: 1000 } })

  // Counted across the runs of the next property, so it cannot pass vacuously.
  let runs = 0
  let nonExecuteBases = 0
  it.prop("an unquoted operator (or a pipe into a non-filter) anywhere makes it execute", [structured], ([r]) => {
    const { base, hostile } = build(r)
    runs++
    if (classify(base, cwd).kind !== "execute") nonExecuteBases++
    expect(classify(hostile, cwd)).toEqual({ kind: "execute", locations: [] })
  }, { fastCheck: { numRuns: 2000 } })

  it("most of those commands are not execute without the operator", () => {
    expect(runs).toBeGreaterThanOrEqual(2000)
    expect(nonExecuteBases / runs).toBeGreaterThan(0.9)
  })
})
