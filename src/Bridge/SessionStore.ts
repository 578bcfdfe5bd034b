/**
 * Where persisted sessions live: one log per session (`<id>.jsonl`, mode 0600) and its lock
 * (`<id>.lock`) in one directory (mode 0700), by default `$XDG_STATE_HOME/dsh-acp/sessions`.
 * A write is one `write(2)` of one whole line on a descriptor opened `O_APPEND`, so a kill leaves at
 * worst a torn last line, which reading skips and reopening cuts off. A file is read only if it is
 * a regular file of this user (never through a symlink) and starts with our header.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { compact } from "./SessionCompaction.js"
import * as SessionLog from "./SessionLog.js"

export interface StoreConfig {
  readonly dir: string
  /** A log past this size is rewritten with its newest turns (default 64 MiB). */
  readonly maxBytes: number
  /** Written into each new log's header: which harness the session ran with. */
  readonly harness: string
  /** `session/list` page size. */
  readonly pageSize: number
}

export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024

/** `$XDG_STATE_HOME/dsh-acp/sessions`, else `~/.local/state/dsh-acp/sessions`. */
export const defaultDir = (env: Readonly<Record<string, string | undefined>> = process.env): string => {
  const state = env["XDG_STATE_HOME"]
  return join(state !== undefined && state.startsWith("/") ? state : join(homedir(), ".local", "state"), "dsh-acp", "sessions")
}

export class SessionStore extends Context.Tag("dsh-acp/Bridge/SessionStore")<SessionStore, StoreConfig>() {
  /** The store's configuration: the defaults, overridden field by field. */
  static readonly config = (config: Partial<StoreConfig> = {}): StoreConfig =>
    ({ dir: defaultDir(), maxBytes: DEFAULT_MAX_BYTES, harness: "shell", pageSize: 50, ...config })

  static readonly layer = (config: Partial<StoreConfig> = {}): Layer.Layer<SessionStore> =>
    Layer.succeed(SessionStore, SessionStore.config(config))
}

/** Session ids name files: anything else is refused before a path is built from it. */
export const isValidId = (id: string): boolean => /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id)

export const logPath = (config: StoreConfig, id: string) => join(config.dir, `${id}.jsonl`)
export const lockPath = (config: StoreConfig, id: string) => join(config.dir, `${id}.lock`)

const ensureDir = (config: StoreConfig) => {
  fs.mkdirSync(config.dir, { recursive: true, mode: 0o700 })
  fs.chmodSync(config.dir, 0o700)
}

/** Refuses what we did not write: a symlink, a directory, another user's file. */
const checkOurs = (path: string): Either.Either<fs.Stats, SessionLog.LogError> => {
  let stat: fs.Stats
  try {
    stat = fs.lstatSync(path)
  } catch {
    return Either.left(new SessionLog.LogError({ reason: "Unreadable", message: `${path} does not exist` }))
  }
  if (!stat.isFile()) return Either.left(new SessionLog.LogError({ reason: "Foreign", message: `${path} is not a regular file; refused` }))
  if (typeof process.getuid === "function" && stat.uid !== process.getuid()) {
    return Either.left(new SessionLog.LogError({ reason: "Foreign", message: `${path} belongs to another user; refused` }))
  }
  return Either.right(stat)
}

export const exists = (config: StoreConfig, id: string): boolean => isValidId(id) && fs.existsSync(logPath(config, id))

/** Reads and checks a whole log. */
export const read = (config: StoreConfig, id: string): Either.Either<SessionLog.Parsed, SessionLog.LogError> => {
  const path = logPath(config, id)
  return Either.flatMap(checkOurs(path), () => {
    let text: string
    try {
      text = fs.readFileSync(path, "utf8")
    } catch (error) {
      return Either.left(new SessionLog.LogError({ reason: "Unreadable", message: `${path}: ${(error as Error).message}` }))
    }
    return Either.flatMap(SessionLog.parse(text, path), (parsed) =>
      parsed.header.id === id
        ? Either.right(parsed)
        : Either.left(new SessionLog.LogError({ reason: "Foreign", message: `${path} holds session ${parsed.header.id}, not ${id}; refused` })))
  })
}

/** An open log of one session; appends never fail the session (a full disk is logged, not fatal). */
export interface LogWriter {
  readonly append: (record: SessionLog.Record) => Effect.Effect<void>
  readonly close: Effect.Effect<void>
}

const writer = (config: StoreConfig, id: string, initialBytes: number): LogWriter => {
  const path = logPath(config, id)
  let fd: number | undefined = fs.openSync(path, "a", 0o600)
  let bytes = initialBytes
  let compactAt = config.maxBytes
  let failed = false

  const compactNow = () => {
    const parsed = read(config, id)
    if (Either.isLeft(parsed)) throw new Error(parsed.left.message)
    const lines = compact(parsed.right, Math.floor(config.maxBytes / 2))
    const aside = `${path}.${process.pid}.tmp`
    fs.writeFileSync(aside, lines.join(""), { mode: 0o600 })
    const tmp = fs.openSync(aside, "r")
    fs.fsyncSync(tmp)
    fs.closeSync(tmp)
    fs.renameSync(aside, path)
    fs.closeSync(fd!)
    fd = fs.openSync(path, "a", 0o600)
    bytes = fs.fstatSync(fd).size
  }

  const append = (record: SessionLog.Record) =>
    Effect.suspend(() => {
      if (fd === undefined) return Effect.void
      const line = SessionLog.recordLine(record)
      if (Either.isLeft(line)) return Effect.logWarning(`session ${id}: a ${record.t} record does not encode; not persisted: ${line.left.slice(0, 300)}`)
      try {
        // One write for the line; a regular file takes it whole, but a short write is finished
        // rather than left for the next line to land in the middle of this one.
        const buffer = Buffer.from(line.right, "utf8")
        for (let at = 0; at < buffer.length;) at += fs.writeSync(fd, buffer, at)
        bytes += buffer.length
        failed = false
      } catch (error) {
        if (failed) return Effect.void
        failed = true
        return Effect.logWarning(`session ${id}: cannot write its log ${path}: ${(error as Error).message}`)
      }
      if (bytes <= compactAt) return Effect.void
      try {
        compactNow()
        compactAt = Math.max(config.maxBytes, bytes * 2)
        return Effect.logInfo(`session ${id}: log compacted to ${bytes} bytes`)
      } catch (error) {
        // Do not retry on every write: wait until the log has grown as much again.
        compactAt = bytes * 2
        return Effect.logWarning(`session ${id}: cannot compact its log: ${(error as Error).message}`)
      }
    })

  return {
    append,
    close: Effect.sync(() => {
      if (fd !== undefined) fs.closeSync(fd)
      fd = undefined
    })
  }
}

/** Starts the log of a new session (its header), exclusively: an existing file is never overwritten. */
export const create = (config: StoreConfig, header: SessionLog.Header): LogWriter => {
  ensureDir(config)
  const line = SessionLog.headerLine(header)
  fs.writeFileSync(logPath(config, header.id), line, { flag: "wx", mode: 0o600 })
  return writer(config, header.id, Buffer.byteLength(line))
}

/** Opens a log that was read (and checked) for appending; a torn last line is cut off first. */
export const reopen = (config: StoreConfig, id: string): LogWriter => {
  const path = logPath(config, id)
  const size = fs.statSync(path).size
  const fd = fs.openSync(path, "r+")
  try {
    // Find the last newline: whatever follows it is the torn line.
    const chunk = Buffer.alloc(Math.min(size, 1 << 20))
    fs.readSync(fd, chunk, 0, chunk.length, size - chunk.length)
    const cut = chunk.lastIndexOf(0x0a)
    const end = cut < 0 ? size - chunk.length : size - chunk.length + cut + 1
    if (end < size) fs.ftruncateSync(fd, end)
    return writer(config, id, end)
  } finally {
    fs.closeSync(fd)
  }
}

export const remove = (config: StoreConfig, id: string): void => {
  fs.rmSync(logPath(config, id), { force: true })
}

export interface Listed {
  readonly sessionId: string
  readonly cwd: string
  readonly title: string
  readonly updatedAt: string
  readonly mtimeMs: number
}

const HEAD_BYTES = 16 * 1024

/** The header and title of one log, from its first lines; `undefined` for what is not ours or never prompted. */
const summary = (config: StoreConfig, file: string): Listed | undefined => {
  const path = join(config.dir, file)
  const stat = checkOurs(path)
  if (Either.isLeft(stat)) return undefined
  const buffer = Buffer.alloc(Math.min(stat.right.size, HEAD_BYTES))
  const fd = fs.openSync(path, "r")
  try {
    fs.readSync(fd, buffer, 0, buffer.length, 0)
  } finally {
    fs.closeSync(fd)
  }
  // Whole lines only (the header, then the title right after it): a cut line is not read.
  const lines = buffer.toString("utf8").split("\n").slice(0, -1).slice(0, 2)
  const parsed = SessionLog.parse(lines.map((l) => `${l}\n`).join(""), path)
  if (Either.isLeft(parsed) || `${parsed.right.header.id}.jsonl` !== file) return undefined
  const record = parsed.right.records[0]
  const title = record?.t === "title" ? record.title : parsed.right.header.title
  if (title === undefined) return undefined
  return { sessionId: parsed.right.header.id, cwd: parsed.right.header.cwd, title, updatedAt: stat.right.mtime.toISOString(), mtimeMs: stat.right.mtimeMs }
}

/** Every prompted session, newest first (`cwd`: only those of that directory). */
export const list = (config: StoreConfig, cwd: string | undefined): ReadonlyArray<Listed> => {
  let files: Array<string>
  try {
    files = fs.readdirSync(config.dir).filter((f) => f.endsWith(".jsonl") && isValidId(f.slice(0, -6)))
  } catch {
    return []
  }
  const found: Array<Listed> = []
  for (const file of files) {
    try {
      const entry = summary(config, file)
      if (entry !== undefined && (cwd === undefined || entry.cwd === cwd)) found.push(entry)
    } catch {
      // removed while we looked
    }
  }
  return found.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.sessionId < b.sessionId ? -1 : 1))
}
