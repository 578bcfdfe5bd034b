/**
 * A scripted model provider on 127.0.0.1 (ephemeral port): each request takes the next reply from
 * a queue (or a function of the request), so a test fixes exactly what the "model" streams. It
 * records every request (path, headers, parsed body) and notices when a client hangs up on a
 * streaming reply, which is how tests see that cancelling a turn aborted the HTTP request.
 */
import * as Effect from "effect/Effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any
}

export interface Reply {
  readonly status?: number
  readonly headers?: Record<string, string>
  /** Written in order; strings are written as is (SSE framing is the caller's, so quirks can be scripted). */
  readonly chunks?: ReadonlyArray<string>
  /** A plain body (for error replies). */
  readonly body?: string
  /** Destroy the socket after the chunks instead of ending the response. */
  readonly cut?: boolean
  /** Keep the response open after the chunks until the client goes away. */
  readonly hang?: boolean
  /** Pause between chunks, so a reader sees them arrive separately. */
  readonly delayMs?: number
}

export interface FakeProvider {
  readonly url: string
  readonly requests: ReadonlyArray<RecordedRequest>
  /** How many streaming replies ended because the client closed the connection. */
  readonly clientAborts: () => number
  /** Resolves at the next (or a past, not yet awaited) client abort. */
  readonly nextAbort: (timeoutMs?: number) => Promise<void>
  readonly reply: (...replies: ReadonlyArray<Reply | ((request: RecordedRequest) => Reply)>) => void
  readonly close: () => Promise<void>
}

export const sse = (data: unknown, event?: string): string =>
  `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`

export const startFakeProvider = async (): Promise<FakeProvider> => {
  const requests: Array<RecordedRequest> = []
  const queue: Array<Reply | ((request: RecordedRequest) => Reply)> = []
  let aborts = 0
  let awaited = 0
  const waiters: Array<() => void> = []
  const sockets = new Set<import("node:net").Socket>()

  const server = http.createServer((req, res) => {
    const body: Array<Buffer> = []
    req.on("data", (b: Buffer) => body.push(b))
    req.on("end", async () => {
      const text = Buffer.concat(body).toString("utf8")
      let parsed: unknown = text
      try {
        parsed = JSON.parse(text)
      } catch {
        // keep the text
      }
      const recorded: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: parsed }
      requests.push(recorded)
      const next = queue.shift()
      const reply = typeof next === "function" ? next(recorded) : next ?? { status: 500, body: JSON.stringify({ error: { message: "fake provider: no reply scripted" } }) }
      let finished = false
      res.on("close", () => {
        if (!finished) {
          aborts++
          waiters.splice(0).forEach((w) => w())
        }
      })
      if (reply.body !== undefined) {
        res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers })
        res.end(reply.body)
        finished = true
        return
      }
      res.writeHead(reply.status ?? 200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers })
      res.flushHeaders()
      for (const chunk of reply.chunks ?? []) {
        if (res.destroyed) return
        res.write(chunk)
        if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs))
      }
      if (reply.hang) return
      if (reply.cut) {
        finished = true
        // Let the written chunks reach the client before the connection breaks.
        setTimeout(() => res.socket?.destroy(), 20)
        return
      }
      finished = true
      res.end()
    })
  })
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    clientAborts: () => aborts,
    nextAbort: (timeoutMs = 5000) =>
      new Promise<void>((resolve, reject) => {
        if (aborts > awaited) {
          awaited++
          return resolve()
        }
        const timer = setTimeout(() => reject(new Error("fake provider: the client never hung up")), timeoutMs)
        waiters.push(() => {
          clearTimeout(timer)
          awaited++
          resolve()
        })
      }),
    reply: (...replies) => {
      queue.push(...replies)
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      })
  }
}

/** Runs `f` with a fresh fake provider, closed when `f` ends (however it ends). */
export const withServer = <A, E>(f: (server: FakeProvider) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(Effect.promise(startFakeProvider), f, (server) => Effect.promise(server.close))
