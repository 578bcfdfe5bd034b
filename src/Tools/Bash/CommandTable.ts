/**
 * Per-command knowledge for `Classify.ts`: which options each command accepts, which of them take a
 * value, and what its operands mean. Display only, so every table is a whitelist: an option not
 * listed here (e.g. `sed -i`, `rg --pre`, `curl -o f`, `tree -o f`, `sort --compress-program`)
 * makes the command `execute`, because an unknown option may write, run a program, or shift which
 * words are files.
 */
import type { CommandKind } from "./Classify.js"
import { getopt, has, namedFiles, type OptionSpec, type Parsed, spec, values } from "./Getopt.js"

/** What a command does, by its words: a class and the paths it names, or undefined = execute. */
export interface Found {
  readonly kind: Exclude<CommandKind, "execute">
  readonly paths: ReadonlyArray<string>
  readonly line?: number
}

/** `f()` computed once, on first call. */
const once = <A>(f: () => A): (() => A) => {
  let a: A | undefined
  return () => (a ??= f())
}

// ---------------------------------------------------------------------------------------------
// read

const readFiles = (s: OptionSpec, extra?: (p: Parsed, files: ReadonlyArray<string>) => boolean) =>
  (words: ReadonlyArray<string>): Found | undefined => {
    const p = getopt(words, s)
    const files = p && namedFiles(p.operands)
    if (!p || !files || (extra && !extra(p, files))) return undefined
    return { kind: "read", paths: files }
  }

const headTail = (follow: string) =>
  spec(`qvz${follow}`, "nc", `quiet silent verbose zero-terminated ${follow ? "retry follow?" : ""}`, "lines=n bytes=c", true)
const head = headTail("")
const tail = headTail("fF")
/** `less +cmd` / `more +/pat` run pager commands: not a plain read. */
const noPagerCommands = (_: Parsed, files: ReadonlyArray<string>) => files.every((f) => !f.startsWith("+"))

const bat = spec(
  "ApnPfuSd",
  "lHrm",
  "show-all plain number force-colorization unbuffered chop-long-lines diff",
  "language=l highlight-line=H line-range=r map-syntax=m style theme color paging wrap tabs decorations terminal-width"
)
const batRead = (words: ReadonlyArray<string>): Found | undefined => {
  const found = readFiles(bat)(words)
  if (!found) return undefined
  // `bat -r 10:20 f` shows from line 10.
  const range = /^([1-9][0-9]*)(?::|$)/.exec(values(getopt(words, bat)!, "r")[0] ?? "")
  return range && found.paths.length === 1 ? { ...found, line: Number(range[1]) } : found
}

/** `sed -n 'Np'` / `sed -n 'N,Mp'` and nothing else (no `-i`, no other script). */
const sed = spec("nEsu", "e", "quiet=n silent=n regexp-extended=E separate=s unbuffered=u", "expression=e")
const sedRead = (words: ReadonlyArray<string>): Found | undefined => {
  const p = getopt(words, sed)
  if (!p || !has(p, "n")) return undefined
  const scripts = values(p, "e")
  const [script, ...rest] = scripts.length > 0 ? [...scripts, ...p.operands] : p.operands
  if (scripts.length > 1 || script === undefined) return undefined
  const m = /^([1-9][0-9]*)(?:,[1-9][0-9]*)?p$/.exec(script)
  const files = namedFiles(rest)
  if (!m || !files) return undefined
  // Without -s the files are one stream: line N is only a line of the file when there is one.
  return files.length === 1 ? { kind: "read", paths: files, line: Number(m[1]) } : { kind: "read", paths: files }
}

// ---------------------------------------------------------------------------------------------
// search

/**
 * Pattern-then-paths tools: the first operand is the pattern, unless an option in `allPaths` gave
 * it (`-e`, `-f`) or says there is none (`rg --files`); then every operand is a path.
 */
const patternSearch = (s: OptionSpec, allPaths: string, needPaths = "") =>
  (words: ReadonlyArray<string>): Found | undefined => {
    const p = getopt(words, s)
    if (!p) return undefined
    const byOption = has(p, ...allPaths.split(" "))
    if (!byOption && p.operands.length === 0) return undefined
    const paths = byOption ? p.operands : p.operands.slice(1)
    if (paths.some((x) => x === "" || x === "-")) return undefined
    // `grep x` alone reads stdin (here: nothing); it searches files only when named or with -r.
    if (needPaths !== "" && paths.length === 0 && !has(p, ...needPaths.split(" "))) return undefined
    return { kind: "search", paths }
  }

const grepLong = "ignore-case=i no-ignore-case invert-match=v word-regexp=w line-regexp=x count=c " +
  "files-with-matches=l files-without-match=L line-number=n no-filename=h with-filename=H only-matching=o " +
  "quiet=q silent=q no-messages=s recursive=r dereference-recursive=R extended-regexp=E fixed-strings=F " +
  "basic-regexp=G perl-regexp=P null-data=z null=Z text=a byte-offset=b initial-tab=T line-buffered color? colour?"
const grep = spec("iyvwxclLnhHoqsrREFGPzZaIbT", "efmABC", grepLong,
  "regexp=e file=f max-count=m after-context=A before-context=B context=C include exclude exclude-dir label binary-files", true)

const rg = spec(
  "abcFHhIiLlnNopPqsSUuvwxz0.", "ABCefgjmMrtTEd",
  "hidden no-ignore no-ignore-vcs no-ignore-parent no-require-git files files-with-matches=l files-without-match count=c " +
    "count-matches json vimgrep heading no-heading line-number=n no-line-number=N column no-filename=I " +
    "with-filename=H ignore-case=i smart-case=S case-sensitive=s fixed-strings=F word-regexp=w line-regexp=x " +
    "invert-match=v only-matching=o multiline=U multiline-dotall pcre2=P follow=L text=a search-zip=z null=0 stats " +
    "trim type-list sort-files no-messages passthru unrestricted=u crlf binary no-config quiet=q pretty=p " +
    "glob-case-insensitive one-file-system",
  "regexp=e file=f type=t type-not=T glob=g iglob max-count=m max-columns=M max-depth=d threads=j " +
    "context=C before-context=B after-context=A color colors sort sortr replace=r encoding=E max-filesize engine " +
    "context-separator field-match-separator path-separator"
)

const ag = spec("iswvlLcQSafuUHn0", "ABCGgm",
  "hidden ignore-case=i case-sensitive=s smart-case=S literal=Q word-regexp=w invert-match=v count=c " +
    "files-with-matches=l files-without-matches=L nocolor color noheading heading nogroup group unrestricted=u " +
    "all-types=a search-binary follow=f vimgrep column numbers nonumbers filename nofilename stats silent " +
    "skip-vcs-ignores=U one-device",
  "ignore ignore-dir file-search-regex=G depth max-count=m context=C after=A before=B")

const ack = spec("iIswvlLcQhHnfgo1", "ABCm",
  "ignore-case=i smart-case literal=Q word-regexp=w invert-match=v count=c files-with-matches=l " +
    "files-without-matches=L nocolor color noheading heading nobreak break nogroup group column nocolumn " +
    "with-filename=H no-filename=h follow nofollow sort-files",
  "type ignore-dir noignore-dir max-count=m context=C after-context=A before-context=B")

const gitGrep = spec("ivwxclLnhHoqEFGPIapWz", "eABCfm",
  "cached untracked no-index no-exclude-standard exclude-standard recurse-submodules text=a ignore-case=i " +
    "word-regexp=w invert-match=v full-name extended-regexp=E basic-regexp=G perl-regexp=P fixed-strings=F " +
    "line-number=n column files-with-matches=l name-only=l files-without-match=L null=z count=c break heading " +
    "show-function=p function-context=W all-match quiet=q and or not",
  "max-depth context=C after-context=A before-context=B threads regexp=e file=f max-count=m")

/** `git grep` (optionally `git --no-pager grep`); after `--` only paths, before it revisions too. */
const gitRead = (words: ReadonlyArray<string>): Found | undefined => {
  const rest = words[0] === "--no-pager" ? words.slice(1) : words
  if (rest[0] !== "grep") return undefined
  const dash = rest.indexOf("--")
  const found = patternSearch(gitGrep, "e f")(dash < 0 ? rest.slice(1) : rest.slice(1, dash))
  if (!found || dash < 0) return found
  const after = rest.slice(dash + 1)
  return namedFiles(after) ? { kind: "search", paths: after } : undefined
}

const fd = spec("HIuisgFapLl01q", "edtEScjo",
  "hidden no-ignore=I no-ignore-vcs unrestricted=u case-sensitive=s ignore-case=i glob=g regex fixed-strings=F " +
    "absolute-path=a list-details=l follow=L full-path=p print0=0 quiet=q show-errors prune one-file-system",
  "extension=e type=t max-depth=d min-depth exact-depth exclude=E size=S changed-within changed-before " +
    "owner=o color=c threads=j max-results search-path")
const fdSearch = (words: ReadonlyArray<string>): Found | undefined => {
  const p = getopt(words, fd)
  if (!p) return undefined
  const paths = [...p.operands.slice(1), ...values(p, "search-path")]
  return namedFiles(paths) || paths.length === 0 ? { kind: "search", paths } : undefined
}

const ls = spec("1aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ", "ITw",
  "all=a almost-all=A author escape=b human-readable=h si dereference=L dereference-command-line=H directory=d " +
    "classify=F file-type inode=i numeric-uid-gid=n literal=N no-group=G hide-control-chars=q show-control-chars " +
    "quote-name=Q recursive=R reverse=r size=s group-directories-first full-time color? " +
    "sort? format? time? time-style? block-size? hide? ignore? indicator-style? quoting-style? tabsize? width?")
const tree = spec("adfilxqNQpugshDFvtrcUCnJX", "LPI",
  "noreport dirsfirst gitignore prune du matchdirs ignore-case", "filelimit charset timefmt sort")

/** Paths are the operands; none named (`ls`, `tree`) is still a search, of the cwd. */
const listPaths = (s: OptionSpec) => (words: ReadonlyArray<string>): Found | undefined => {
  const p = getopt(words, s)
  return p && (p.operands.length === 0 || namedFiles(p.operands)) ? { kind: "search", paths: p.operands } : undefined
}

/** find: leading paths, then an expression of tests that neither run nor write anything. */
const findNoArg = once(() => new Set(("-print -print0 -prune -quit -empty -true -false -readable -writable -executable " +
  "-nouser -nogroup -xdev -mount -depth -follow -noleaf -daystart -ls -o -or -a -and -not ! ( ) , " +
  "-ignore_readdir_race -noignore_readdir_race").split(" ")))
const findOneArg = once(() => new Set(("-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -type " +
  "-xtype -maxdepth -mindepth -mtime -mmin -atime -amin -ctime -cmin -newer -anewer -cnewer -size -perm -user " +
  "-group -uid -gid -links -inum -samefile -lname -ilname -used -fstype -printf").split(" ")))
const findSearch = (words: ReadonlyArray<string>): Found | undefined => {
  let i = 0
  while (i < words.length && /^-[HLP]+$/.test(words[i]!)) i++
  const paths: Array<string> = []
  while (i < words.length && !/^[-(!),]/.test(words[i]!)) paths.push(words[i++]!)
  for (; i < words.length; i++) {
    const w = words[i]!
    if (findOneArg().has(w) || /^-newer[aBcmt][aBcmt]$/.test(w)) {
      if (++i >= words.length) return undefined
    } else if (!findNoArg().has(w)) {
      return undefined // -exec, -execdir, -ok, -delete, -fprint…, or unknown
    }
  }
  return paths.length === 0 || namedFiles(paths) ? { kind: "search", paths } : undefined
}

// ---------------------------------------------------------------------------------------------
// fetch

const isHttpUrl = (s: string) => /^https?:\/\/[^\s/]/i.test(s)

const curl = spec("sSLfIikvqgN0", "HAemruxXoDb",
  "silent=s show-error=S location=L fail=f head=I include=i insecure=k verbose=v compressed no-buffer=N " +
    "http1.0 http1.1 http2 ipv4 ipv6 fail-with-body globoff=g no-progress-meter location-trusted",
  "header=H user-agent=A referer=e max-time=m range=r user=u proxy=x request=X output=o dump-header=D " +
    "cookie=b connect-timeout retry retry-delay retry-max-time max-redirs limit-rate url")
/** Only GET/HEAD, output (body and headers) only to stdout. */
const curlFetch = (words: ReadonlyArray<string>): Found | undefined => {
  const p = getopt(words, curl)
  if (!p) return undefined
  const urls = [...p.operands, ...values(p, "url")]
  const stdoutOnly = [...values(p, "o"), ...values(p, "D")].every((v) => v === "-")
  const method = values(p, "X").every((v) => v === "GET" || v === "HEAD")
  return urls.length > 0 && urls.every(isHttpUrl) && stdoutOnly && method ? { kind: "fetch", paths: [] } : undefined
}

/** wget saves to a file unless told `-O -` (or `--spider`, which saves nothing). */
const wget = spec("qvS", "OUTtn",
  "quiet=q verbose=v no-verbose server-response=S spider no-check-certificate inet4-only inet6-only",
  "output-document=O user-agent=U timeout=T tries=t header wait")
const wgetFetch = (words: ReadonlyArray<string>): Found | undefined => {
  const p = getopt(words, wget)
  if (!p || !values(p, "n").every((v) => v === "v")) return undefined
  const outputs = values(p, "O")
  const noFile = has(p, "spider") ? outputs.length === 0 : outputs.length > 0 && outputs.every((v) => v === "-")
  return p.operands.length > 0 && p.operands.every(isHttpUrl) && noFile ? { kind: "fetch", paths: [] } : undefined
}

// ---------------------------------------------------------------------------------------------
// Pure filters after one pipe: they read stdin only (no operands), write stdout only.

const filterOnly = (s: OptionSpec) => (words: ReadonlyArray<string>) => {
  const p = getopt(words, s)
  return p !== undefined && p.operands.length === 0
}

/** Whether `words` (after the `|`) is one pure filter. */
export const isFilter = (words: ReadonlyArray<string>): boolean =>
  words.length > 0 && filters().get(words[0]!)?.(words.slice(1)) === true

/** What the command `words` is, or undefined = execute. */
export const lookup = (words: ReadonlyArray<string>): Found | undefined =>
  words.length > 0 ? commands().get(words[0]!)?.(words.slice(1)) : undefined

// Built on first use (not at import), like the long-option maps: a cold start never pays for them.
const filters = once((): ReadonlyMap<string, (words: ReadonlyArray<string>) => boolean> => new Map([
  ["head", filterOnly(head)],
  ["tail", filterOnly(tail)],
  ["wc", filterOnly(spec("clmwL", "", "bytes=c chars=m lines=l words=w max-line-length=L"))],
  ["sort", filterOnly(spec("bdfgiMhnRrVscmuz", "ktS",
    "ignore-leading-blanks=b dictionary-order=d ignore-case=f general-numeric-sort=g human-numeric-sort=h " +
      "month-sort=M numeric-sort=n random-sort=R reverse=r version-sort=V stable=s unique=u zero-terminated=z",
    "key=k field-separator=t buffer-size=S parallel"))],
  ["uniq", filterOnly(spec("cdDiuz", "fsw",
    "count=c repeated=d unique=u ignore-case=i zero-terminated=z all-repeated?", "skip-fields=f skip-chars=s check-chars=w"))],
  ["cut", filterOnly(spec("snz", "bcdf", "only-delimited=s complement zero-terminated=z",
    "bytes=b characters=c delimiter=d fields=f output-delimiter"))],
  ["grep", (words) => {
    const p = getopt(words, grep)
    // No files and no -r: grep filters stdin; a pattern is needed unless one came by -e/-f.
    return p !== undefined && !has(p, "r", "R") && p.operands.length === (has(p, "e", "f") ? 0 : 1)
  }]
]))

const commands = once((): ReadonlyMap<string, (words: ReadonlyArray<string>) => Found | undefined> => new Map([
  ["cat", readFiles(spec("AbeEnstTuv", "", "show-all=A number-nonblank=b show-ends=E number=n squeeze-blank=s show-tabs=T show-nonprinting=v"))],
  ["head", readFiles(head)],
  ["tail", readFiles(tail)],
  ["less", readFiles(spec("NRSiIXFrMmnsEeqQKJw", "xp", "LINE-NUMBERS=N RAW-CONTROL-CHARS=R chop-long-lines=S ignore-case=i quit-if-one-screen=F no-init=X"), noPagerCommands)],
  ["more", readFiles(spec("dlfpcsu", ""), noPagerCommands)],
  ["bat", batRead],
  ["nl", readFiles(spec("p", "bdfhilnsvw", "no-renumber=p",
    "body-numbering=b section-delimiter=d footer-numbering=f header-numbering=h line-increment=i join-blank-lines=l " +
      "number-format=n number-separator=s starting-line-number=v number-width=w"))],
  ["sed", sedRead],
  ["grep", patternSearch(grep, "e f", "r R")],
  // `rg --files [path…]` and `rg --type-list` take no pattern.
  ["rg", patternSearch(rg, "e f files type-list")],
  ["ag", patternSearch(ag, "g")],
  ["ack", patternSearch(ack, "f")],
  ["git", gitRead],
  ["find", findSearch],
  ["fd", fdSearch],
  ["ls", listPaths(ls)],
  ["tree", listPaths(tree)],
  ["curl", curlFetch],
  ["wget", wgetFetch]
]))
