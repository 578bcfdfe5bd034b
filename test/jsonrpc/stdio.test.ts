import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import { PassThrough, Writable } from "node:stream"
import * as Stdio from "../../src/Bridge/Stdio.js"
import { spawn } from "node:child_process"
import { once } from "node:events"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { assertJsonRpcLine, type Message } from "../support/rpcHarness.js"

const script = fileURLToPath(new URL("../support/echoPeer.ts", import.meta.url))

describe("JSON-RPC peer over real stdio", () => {
  it("serves a child process's stdin/stdout, answers in-flight work after EOF, logs only to stderr", async () => {
    const started = Date.now()
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["pipe", "pipe", "pipe"] })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    const lines: Array<string> = []
    const waiters: Array<() => void> = []
    createInterface({ input: child.stdout }).on("line", (line) => {
      lines.push(line)
      waiters.splice(0).forEach((w) => w())
    })
    const waitFor = async (pred: (m: Message) => boolean): Promise<Message> => {
      for (;;) {
        const found = lines.map((l) => JSON.parse(l) as Message).find(pred)
        if (found !== undefined) return found
        await new Promise<void>((resolve) => waiters.push(resolve))
      }
    }
    const send = (msg: unknown) => child.stdin.write((typeof msg === "string" ? msg : JSON.stringify(msg)) + "\n")
    const exited = once(child, "exit")

    send({ jsonrpc: "2.0", id: 1, method: "echo", params: { text: "héllo" } })
    expect(await waitFor((m) => m.id === 1)).toEqual({ jsonrpc: "2.0", id: 1, result: { text: "héllo" } })
    const firstAnswerMs = Date.now() - started

    // A request from the child, answered by us, resolves the child's handler.
    send({ jsonrpc: "2.0", id: "a", method: "ask", params: {} })
    const question = await waitFor((m) => m.method === "client/question")
    send({ jsonrpc: "2.0", id: question.id, result: { answer: 42 } })
    expect(await waitFor((m) => m.id === "a")).toEqual({ jsonrpc: "2.0", id: "a", result: { answer: 42 } })

    // An overlong line (limit 1024 in the script) is rejected; the next one is served.
    send({ jsonrpc: "2.0", id: 2, method: "echo", params: { text: "x".repeat(5000) } })
    send({ jsonrpc: "2.0", id: 3, method: "echo", params: { text: "after" } })
    expect((await waitFor((m) => m.id === null)).error.code).toBe(-32600)
    expect((await waitFor((m) => m.id === 3)).result).toEqual({ text: "after" })

    // In flight at EOF: still answered before the process exits.
    send({ jsonrpc: "2.0", id: "slow", method: "slow", params: { ms: 300 } })
    send("{not json")
    child.stdin.end()
    const [code] = await exited
    expect(code).toBe(0)
    expect(lines.map((l) => JSON.parse(l)).find((m) => m.id === "slow")).toEqual({ jsonrpc: "2.0", id: "slow", result: "slept" })
    expect(lines.map((l) => JSON.parse(l)).filter((m) => m.error?.code === -32700).length).toBe(1)
    for (const line of lines) assertJsonRpcLine(line)
    expect(lines.length).toBe(7)
    expect(stderr).toContain("echo peer ready")
    expect(stderr).toContain("input ended")
    console.error(`stdio peer: first answer ${firstAnswerMs} ms after spawn (node --import tsx, unbundled)`)
  })
})

describe("Stdio helpers", () => {
  it.live("the line writer waits for 'drain' when the pipe is full", () =>
    Effect.gen(function*() {
      const pipe = new PassThrough({ highWaterMark: 16 })
      const write = Stdio.lineWriter(pipe)
      const fiber = yield* Effect.fork(write("x".repeat(100)))
      yield* Effect.sleep("30 millis")
      expect(fiber.unsafePoll()).toBeNull()
      expect(String(pipe.read())).toBe("x".repeat(100) + "\n")
      yield* Fiber.join(fiber)
      yield* write("small")
      // Corked until the next tick.
      yield* Effect.sleep("5 millis")
      expect(String(pipe.read())).toBe("small\n")
    }))

  it.live("lines written in one synchronous run leave in one write, in order", () =>
    Effect.gen(function*() {
      const writes: Array<string> = []
      const sink = new Writable({
        write: (chunk, _enc, cb) => {
          writes.push(String(chunk))
          cb()
        },
        writev: (chunks, cb) => {
          writes.push(chunks.map((c) => String(c.chunk)).join(""))
          cb()
        }
      })
      const write = Stdio.lineWriter(sink)
      yield* write("a")
      yield* write("b")
      yield* write("c")
      expect(writes).toEqual([])
      yield* Effect.sleep("5 millis")
      yield* write("d")
      yield* Effect.sleep("5 millis")
      expect(writes).toEqual(["a\nb\nc\n", "d\n"])
    }))

  it.live("a broken output is logged, not thrown, and later lines are dropped", () => {
    const logs: Array<string> = []
    const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logs.push(String(message))))
    return Effect.gen(function*() {
      const written: Array<string> = []
      const sink = new Writable({
        write: (chunk, _enc, cb) => {
          written.push(String(chunk))
          cb(new Error("EPIPE"))
        }
      })
      const write = Stdio.lineWriter(sink)
      yield* write("first")
      yield* Effect.sleep("10 millis")
      yield* write("second")
      yield* write("third")
      expect(written).toEqual(["first\n"])
      expect(logs.filter((m) => m.includes("protocol output is broken"))).toHaveLength(1)
    }).pipe(Effect.provide(capture))
  })

  it.live("fromReadable yields the chunks and ends at EOF", () =>
    Effect.gen(function*() {
      const pipe = new PassThrough()
      pipe.end("ab\ncd")
      const chunks = yield* Stdio.fromReadable(pipe).pipe(Stream.runCollect)
      expect(Buffer.concat(Chunk.toReadonlyArray(chunks)).toString()).toBe("ab\ncd")
    }))
})
