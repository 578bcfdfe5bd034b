/**
 * A stdio agent (any command speaking NDJSON on its stdin and stdout) as a child process with piped
 * stdio. Every raw stdout line, every line written to its stdin and every stderr line is recorded,
 * so a test can check the wire itself (schema, purity, counts) next to what the official ACP SDK
 * client made of it. `agentProcess.ts` binds it to `dist/bin.js`, `exampleAgent.ts` to the examples.
 */
import * as acp from "@agentclientprotocol/sdk"
import { spawn } from "node:child_process"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any

export interface AgentProcess {
  readonly pid: number
  /** Every line the agent wrote to stdout, exactly as written (without the newline). */
  readonly stdoutLines: ReadonlyArray<string>
  /** Every line the agent wrote to stderr. */
  readonly stderrLines: ReadonlyArray<string>
  /** Every line written to the agent's stdin (by the SDK or by `writeLine`). */
  readonly stdinLines: ReadonlyArray<string>
  /** Every line in both directions, in order: `→ ` to the agent, `← ` from it. */
  readonly wire: ReadonlyArray<string>
  /** Writes one raw line (a newline is appended). */
  readonly writeLine: (line: string) => void
  /** Ends the agent's stdin (EOF). */
  readonly endStdin: () => void
  /** Resolves with the first stdout message (parsed) matching `predicate`, past or future. */
  readonly waitForMessage: (predicate: (message: Json) => boolean, timeoutMs?: number) => Promise<Json>
  /** The response to request `id` (raw mode). */
  readonly response: (id: number | string, timeoutMs?: number) => Promise<Json>
  /** The agent's stdio as an ACP stream for the SDK; at most once per process. */
  readonly sdkStream: () => acp.Stream
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly signal: (signal: NodeJS.Signals) => void
  /** Ends stdin and waits for the exit; SIGKILLs the process if it does not exit in `timeoutMs`. */
  readonly stop: (timeoutMs?: number) => Promise<void>
}

/** Splits a byte stream into UTF-8 lines (a last line without its newline comes at `end`). */
export const lineSplitter = (onLine: (line: string) => void) => {
  const decoder = new TextDecoder()
  let buffer = ""
  return {
    push: (chunk: Uint8Array) => {
      buffer += decoder.decode(chunk, { stream: true })
      let nl: number
      while ((nl = buffer.indexOf("\n")) >= 0) {
        onLine(buffer.slice(0, nl))
        buffer = buffer.slice(nl + 1)
      }
    },
    end: () => {
      buffer += decoder.decode()
      if (buffer !== "") onLine(buffer)
      buffer = ""
    }
  }
}

export const parseOrUndefined = (line: string): Json => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

export interface SpawnOptions {
  readonly cwd?: string
  /** Added to the test's own environment; a variable set to `undefined` is removed. */
  readonly env?: Readonly<Record<string, string | undefined>>
}

/** Spawns `file args` with piped stdio and records its lines. */
export const spawnStdio = (file: string, args: ReadonlyArray<string>, options: SpawnOptions = {}): AgentProcess => {
  const child = spawn(file, args, {
    stdio: ["pipe", "pipe", "pipe"],
    env: Object.fromEntries(Object.entries({ ...process.env, ...options.env }).filter(([, v]) => v !== undefined)),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd })
  })
  const stdoutLines: Array<string> = []
  const stderrLines: Array<string> = []
  const stdinLines: Array<string> = []
  const wire: Array<string> = []
  const waiters = new Set<(message: Json) => void>()

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal }))
  )

  let sdkController: ReadableStreamDefaultController<Uint8Array> | undefined
  const stdout = lineSplitter((line) => {
    stdoutLines.push(line)
    wire.push(`← ${line}`)
    const message = parseOrUndefined(line)
    if (message !== undefined) for (const w of [...waiters]) w(message)
  })
  child.stdout.on("data", (chunk: Buffer) => {
    stdout.push(chunk)
    sdkController?.enqueue(new Uint8Array(chunk))
  })
  child.stdout.on("end", () => {
    stdout.end()
    try {
      sdkController?.close()
    } catch {
      // already closed by the SDK
    }
  })
  const stderr = lineSplitter((line) => stderrLines.push(line))
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk))
  child.stderr.on("end", () => stderr.end())

  const stdin = lineSplitter((line) => {
    stdinLines.push(line)
    wire.push(`→ ${line}`)
  })
  // A write after the agent exited would otherwise crash the test worker with EPIPE.
  child.stdin.on("error", () => {})
  const write = (bytes: Uint8Array) => {
    stdin.push(bytes)
    if (!child.stdin.destroyed && child.stdin.writable) child.stdin.write(bytes)
  }

  const waitForMessage = (predicate: (message: Json) => boolean, timeoutMs = 10_000) =>
    new Promise<Json>((resolve, reject) => {
      for (const line of stdoutLines) {
        const message = parseOrUndefined(line)
        if (message !== undefined && predicate(message)) return resolve(message)
      }
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(new Error(`no matching stdout message within ${timeoutMs} ms; stdout:\n${stdoutLines.slice(-20).join("\n")}\nstderr:\n${stderrLines.slice(-20).join("\n")}`))
      }, timeoutMs)
      const waiter = (message: Json) => {
        if (!predicate(message)) return
        clearTimeout(timer)
        waiters.delete(waiter)
        resolve(message)
      }
      waiters.add(waiter)
    })

  let streamTaken = false
  const sdkStream = (): acp.Stream => {
    if (streamTaken) throw new Error("sdkStream() may be called once per agent process")
    streamTaken = true
    const input = new ReadableStream<Uint8Array>({ start: (controller) => void (sdkController = controller) })
    const output = new WritableStream<Uint8Array>({
      write: (chunk) => write(chunk),
      close: () => void child.stdin.end()
    })
    return acp.ndJsonStream(output, input)
  }

  const stop = async (timeoutMs = 5_000) => {
    child.stdin.end()
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    await exited
    clearTimeout(timer)
  }

  return {
    pid: child.pid!,
    stdoutLines,
    stderrLines,
    stdinLines,
    wire,
    writeLine: (line) => write(new TextEncoder().encode(`${line}\n`)),
    endStdin: () => void child.stdin.end(),
    waitForMessage,
    response: (id, timeoutMs) => waitForMessage((m) => m.id === id && m.method === undefined, timeoutMs),
    sdkStream,
    exited,
    signal: (signal) => void child.kill(signal),
    stop
  }
}
