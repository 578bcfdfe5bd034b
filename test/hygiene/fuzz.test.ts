/**
 * Agent-level fuzzing: generated JSON-RPC traffic against ONE real agent process (`node
 * dist/bin.js`): random bytes, truncated JSON, wrong types for every field of every method,
 * invalid request shapes, unknown methods, duplicate ids, responses to nothing, unknown sessions.
 * After each generated message a valid request must get its correct answer; each bad request must
 * get exactly its error code, a notification or a stray response no reply at all, and every
 * stdout line must be a JSON-RPC message. Then a few protocol behaviours, one by one.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { existsSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { DEFAULT_MAX_LINE_BYTES } from "../../src/Bridge/Ndjson.js"
import { BIN, cardsOf, type Json } from "../support/agentProcess.js"

// ---------------------------------------------------------------------------------------------
// A raw connection: bytes in (so a line can be invalid UTF-8), every stdout line recorded.

interface Raw {
  readonly lines: Array<string>
  readonly write: (bytes: Uint8Array | string) => void
  readonly until: (what: string, done: () => boolean, timeoutMs?: number) => Promise<void>
  readonly child: ChildProcessWithoutNullStreams
}

const connect = (): Raw => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first`)
  const child = spawn(process.execPath, [BIN, "--log-level", "error"], { stdio: ["pipe", "pipe", "pipe"] })
  const lines: Array<string> = []
  const waiters = new Set<() => void>()
  let buffer = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (text: string) => {
    buffer += text
    let nl: number
    while ((nl = buffer.indexOf("\n")) >= 0) {
      lines.push(buffer.slice(0, nl))
      buffer = buffer.slice(nl + 1)
    }
    for (const w of [...waiters]) w()
  })
  child.stderr.resume()
  child.stdin.on("error", () => {})
  const until = (what: string, done: () => boolean, timeoutMs = 10_000) =>
    new Promise<void>((resolve, reject) => {
      if (done()) return resolve()
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error(`timed out waiting for ${what}; last lines:\n${lines.slice(-5).join("\n").slice(0, 3000)}`))
      }, timeoutMs)
      const check = () => {
        if (!done()) return
        clearTimeout(timer)
        waiters.delete(check)
        resolve()
      }
      waiters.add(check)
    })
  return { lines, write: (bytes) => void child.stdin.write(bytes), until, child }
}

const parse = (line: string): Json => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

/** A JSON-RPC 2.0 message as an agent may write it: a response with exactly one of result/error, a request or a notification. */
const isJsonRpcMessage = (m: Json): boolean => {
  if (typeof m !== "object" || m === null || Array.isArray(m) || m.jsonrpc !== "2.0") return false
  if (typeof m.method === "string") return !("result" in m) && !("error" in m)
  if (!("id" in m) || ("result" in m) === ("error" in m)) return false
  return "result" in m || (Number.isInteger(m.error?.code) && typeof m.error?.message === "string")
}

// ---------------------------------------------------------------------------------------------
// Generated bad traffic. Each case: the lines to send, and the replies they must get (id, code).

type Id = string | number | null
interface Case {
  readonly kind: string
  readonly lines: ReadonlyArray<string | Uint8Array>
  readonly replies: ReadonlyArray<{ readonly id: Id; readonly code: number }>
}

const PARSE = -32700
const INVALID_REQUEST = -32600
const NOT_FOUND = -32601
const INVALID_PARAMS = -32602
const NO_RESOURCE = -32002

let idCounter = 0
const freshId = () => `f-${++idCounter}`
const req = (id: Id, method: string, params?: unknown) =>
  JSON.stringify(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params })

const anyJson: FastCheck.Arbitrary<unknown> = FastCheck.oneof(
  FastCheck.string({ maxLength: 12 }),
  FastCheck.integer(),
  FastCheck.double({ noNaN: true, noDefaultInfinity: true }),
  FastCheck.boolean(),
  FastCheck.constant(null),
  FastCheck.dictionary(FastCheck.string({ maxLength: 5 }), FastCheck.oneof(FastCheck.string({ maxLength: 5 }), FastCheck.integer()), { maxKeys: 3 }),
  FastCheck.array(FastCheck.oneof(FastCheck.string({ maxLength: 5 }), FastCheck.integer()), { maxLength: 3 })
)

/** A value of any JSON type that `ok` rejects. */
const wrong = (ok: (u: unknown) => boolean) => anyJson.filter((u) => !ok(u))

const isString = (u: unknown) => typeof u === "string"
const isAbsolute = (u: unknown) => typeof u === "string" && u.startsWith("/")
const isProtocolVersion = (u: unknown) => Number.isInteger(u) && (u as number) >= 0 && (u as number) <= 65535
const isArrayOrNull = (u: unknown) => u === null || Array.isArray(u)

/** The sessions the agent knows (set once the connection is up). */
const known = { sessionId: "" }

/** Every required-or-checked field of every request method, with params valid but for that field. */
const fieldCases: ReadonlyArray<{ method: string; field: string; valid: () => Record<string, unknown>; wrong: FastCheck.Arbitrary<unknown> }> = [
  { method: "initialize", field: "protocolVersion", valid: () => ({ protocolVersion: 1 }), wrong: wrong(isProtocolVersion) },
  { method: "session/new", field: "cwd", valid: () => ({ cwd: "/tmp", mcpServers: [] }), wrong: wrong(isAbsolute) },
  { method: "session/new", field: "mcpServers", valid: () => ({ cwd: "/tmp", mcpServers: [] }), wrong: wrong(isArrayOrNull) },
  {
    method: "session/new",
    field: "additionalDirectories",
    valid: () => ({ cwd: "/tmp", mcpServers: [] }),
    wrong: FastCheck.oneof(wrong(isArrayOrNull), FastCheck.constant(["relative/dir"]), FastCheck.constant([1]))
  },
  {
    method: "session/prompt",
    field: "sessionId",
    valid: () => ({ sessionId: known.sessionId, prompt: [{ type: "text", text: "true" }] }),
    wrong: wrong(isString)
  },
  {
    method: "session/prompt",
    field: "prompt",
    valid: () => ({ sessionId: known.sessionId, prompt: [{ type: "text", text: "true" }] }),
    wrong: FastCheck.oneof(
      wrong(Array.isArray),
      FastCheck.constantFrom<unknown>([1], ["text"], [null], [{}], [{ type: "text" }], [{ type: "text", text: 5 }], [{ type: 7 }])
    )
  },
  { method: "session/close", field: "sessionId", valid: () => ({ sessionId: known.sessionId }), wrong: wrong(isString) },
  // Any methodId fails (no authentication is offered); a wrong type fails the same way.
  { method: "authenticate", field: "methodId", valid: () => ({ methodId: "none" }), wrong: wrong(isString) }
]

const wrongField: FastCheck.Arbitrary<Case> = FastCheck.constantFrom(...fieldCases).chain((c) =>
  FastCheck.tuple(c.wrong, FastCheck.boolean()).map(([value, drop]): Case => {
    const params = c.valid()
    if (drop && c.field !== "additionalDirectories" && c.field !== "mcpServers") delete params[c.field]
    else params[c.field] = value
    const id = freshId()
    return { kind: `wrong type or missing: ${c.method} ${c.field}`, lines: [req(id, c.method, params)], replies: [{ id, code: INVALID_PARAMS }] }
  })
)

const requestMethods = ["initialize", "authenticate", "session/new", "session/prompt", "session/close"]

const wrongParams: FastCheck.Arbitrary<Case> = FastCheck.tuple(
  FastCheck.constantFrom(...requestMethods.filter((m) => m !== "initialize" || true)),
  FastCheck.oneof(FastCheck.string({ maxLength: 8 }), FastCheck.integer(), FastCheck.boolean(), FastCheck.array(FastCheck.integer(), { maxLength: 2 }))
).map(([method, params]): Case => {
  const id = freshId()
  // A scalar is not params at all (-32600); an array is params of the wrong shape (-32602).
  return { kind: "params of the wrong type", lines: [req(id, method, params)], replies: [{ id, code: Array.isArray(params) ? INVALID_PARAMS : INVALID_REQUEST }] }
})

const cancelWrong: FastCheck.Arbitrary<Case> = FastCheck.oneof(wrong(isString), FastCheck.string({ maxLength: 10 })).map((sessionId): Case => ({
  kind: "session/cancel with any params (a notification: no reply)",
  lines: [JSON.stringify({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } })],
  replies: []
}))

const randomBytes: FastCheck.Arbitrary<Case> = FastCheck.uint8Array({ maxLength: 300 }).map((bytes): Case => ({
  kind: "random bytes",
  // A leading control character can start no JSON text; newlines would split the case in several.
  lines: [Uint8Array.from([0x01, ...bytes.filter((b) => b !== 0x0a)])],
  replies: [{ id: null, code: PARSE }]
}))

const truncated: FastCheck.Arbitrary<Case> = FastCheck.tuple(
  FastCheck.constantFrom(...fieldCases),
  FastCheck.double({ min: 0, max: 1, noNaN: true })
).map(([c, at]): Case => {
  const full = req(freshId(), c.method, c.valid())
  return { kind: "truncated JSON", lines: [full.slice(0, 1 + Math.floor(at * (full.length - 2)))], replies: [{ id: null, code: PARSE }] }
})

const unknownMethod: FastCheck.Arbitrary<Case> = FastCheck.tuple(
  FastCheck.oneof(FastCheck.string({ maxLength: 20 }), FastCheck.constantFrom("session/cancel", "session/update", "session/rewind", "$/cancel_request", "fs/read_text_file")),
  FastCheck.boolean()
).filter(([m]) => !requestMethods.includes(m)).map(([method, asRequest]): Case => {
  if (!asRequest) return { kind: "unknown notification (no reply)", lines: [JSON.stringify({ jsonrpc: "2.0", method, params: {} })], replies: [] }
  const id = freshId()
  return { kind: "unknown method", lines: [req(id, method, {})], replies: [{ id, code: NOT_FOUND }] }
})

const duplicateIds: FastCheck.Arbitrary<Case> = FastCheck.tuple(FastCheck.oneof(FastCheck.integer({ min: 1_000_000 }), FastCheck.string({ minLength: 1, maxLength: 8 })), FastCheck.integer({ min: 2, max: 4 })).map(
  ([id, n]): Case => ({
    kind: "duplicate ids",
    lines: Array.from({ length: n }, (_, i) => i % 2 === 0 ? req(id, "authenticate", { methodId: "x" }) : req(id, "no/such/method", {})),
    replies: Array.from({ length: n }, (_, i) => ({ id, code: i % 2 === 0 ? INVALID_PARAMS : NOT_FOUND }))
  })
)

const strayResponse: FastCheck.Arbitrary<Case> = FastCheck.tuple(
  FastCheck.oneof(FastCheck.integer(), FastCheck.string({ maxLength: 8 })),
  FastCheck.oneof(
    anyJson.map((result) => ({ result })),
    FastCheck.tuple(FastCheck.integer(), FastCheck.string({ maxLength: 8 })).map(([code, message]) => ({ error: { code, message } })),
    anyJson.map((error) => ({ error }))
  )
).map(([id, body]): Case => ({ kind: "response to nothing (no reply)", lines: [JSON.stringify({ jsonrpc: "2.0", id, ...body })], replies: [] }))

const invalidShape: FastCheck.Arbitrary<Case> = FastCheck.oneof(
  FastCheck.constantFrom<unknown>(undefined, "1.0", 2, null).map((jsonrpc): Case => {
    const id = freshId()
    const msg: Record<string, unknown> = { id, method: "initialize", params: { protocolVersion: 1 } }
    if (jsonrpc !== undefined) msg.jsonrpc = jsonrpc
    return { kind: "invalid request: jsonrpc", lines: [JSON.stringify(msg)], replies: [{ id, code: INVALID_REQUEST }] }
  }),
  FastCheck.oneof(FastCheck.boolean(), FastCheck.dictionary(FastCheck.string({ maxLength: 3 }), FastCheck.integer(), { maxKeys: 2 }), FastCheck.array(FastCheck.integer(), { maxLength: 2 })).map((id): Case => ({
    kind: "invalid request: id type",
    lines: [JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: 1 } })],
    replies: [{ id: null, code: INVALID_REQUEST }]
  })),
  FastCheck.oneof(FastCheck.integer(), FastCheck.boolean(), FastCheck.constant(null), FastCheck.array(FastCheck.integer(), { maxLength: 2 })).map((method): Case => {
    const id = freshId()
    return { kind: "invalid request: method type", lines: [JSON.stringify({ jsonrpc: "2.0", id, method })], replies: [{ id, code: INVALID_REQUEST }] }
  }),
  FastCheck.oneof(FastCheck.integer(), FastCheck.string({ maxLength: 8 }), FastCheck.constant(null), FastCheck.boolean(), FastCheck.array(FastCheck.integer(), { maxLength: 3 })).map((value): Case => ({
    kind: "invalid request: not an object (or a batch)",
    lines: [JSON.stringify(value)],
    replies: [{ id: null, code: INVALID_REQUEST }]
  }))
)

const unknownSession: FastCheck.Arbitrary<Case> = FastCheck.tuple(FastCheck.string({ maxLength: 12 }), FastCheck.boolean()).map(([sessionId, prompt]): Case => {
  const id = freshId()
  return prompt
    ? { kind: "unknown session: prompt", lines: [req(id, "session/prompt", { sessionId: `x${sessionId}`, prompt: [{ type: "text", text: "true" }] })], replies: [{ id, code: NO_RESOURCE }] }
    : { kind: "unknown session: close", lines: [req(id, "session/close", { sessionId: `x${sessionId}` })], replies: [{ id, code: NO_RESOURCE }] }
})

const anyCase: FastCheck.Arbitrary<Case> = FastCheck.oneof(
  randomBytes,
  truncated,
  // 8 method fields: weighted so each gets about as many cases as another kind.
  { arbitrary: wrongField, weight: 6 },
  wrongParams,
  cancelWrong,
  unknownMethod,
  duplicateIds,
  strayResponse,
  invalidShape,
  unknownSession
)

// ---------------------------------------------------------------------------------------------

const key = (r: { id: Id; code: number }) => `${JSON.stringify(r.id)} ${r.code}`

describe("agent-level fuzzing (one real agent process)", () => {
  let raw: Raw
  let probes = 0
  const counts = new Map<string, number>()

  /** Sends a valid `initialize` and checks its answer; returns once it came. */
  const probe = async () => {
    const id = `probe-${++probes}`
    raw.write(`${req(id, "initialize", { protocolVersion: 1, clientCapabilities: { _meta: { terminal_output: true } } })}\n`)
    let answer: Json
    await raw.until(`the answer to ${id}`, () => (answer = raw.lines.map(parse).find((m) => m?.id === id)) !== undefined)
    expect(answer.result?.protocolVersion).toBe(1)
    expect(answer.result?.agentInfo?.name).toBe("dsh-acp")
    return id
  }

  /** Sends one case, then the probe; checks exactly the expected replies came, and nothing else. */
  const check = async (c: Case) => {
    counts.set(c.kind, (counts.get(c.kind) ?? 0) + 1)
    const from = raw.lines.length
    for (const line of c.lines) {
      raw.write(line)
      raw.write("\n")
    }
    const probeId = await probe()
    // Replies: every response but the probe's (a session/update notification is no reply).
    const others = () => raw.lines.slice(from).map(parse).filter((m) => m?.id !== probeId && m?.method === undefined)
    await raw.until(`${c.replies.length} replies to ${c.kind}`, () => others().length >= c.replies.length)
    for (const line of raw.lines.slice(from)) {
      const m = parse(line)
      expect(isJsonRpcMessage(m), line).toBe(true)
    }
    const got = others().map((m) => (m.error === undefined ? `${JSON.stringify(m.id)} result` : key({ id: m.id, code: m.error.code })))
    expect({ kind: c.kind, got: got.sort() }).toEqual({ kind: c.kind, got: c.replies.map(key).sort() })
  }

  beforeAll(async () => {
    raw = connect()
    await probe()
    const id = freshId()
    raw.write(`${req(id, "session/new", { cwd: realpathSync(tmpdir()), mcpServers: [] })}\n`)
    await raw.until("session/new", () => raw.lines.some((l) => parse(l)?.id === id))
    known.sessionId = raw.lines.map(parse).find((m) => m?.id === id).result.sessionId
  })

  afterAll(async () => {
    raw.child.stdin.end()
    await new Promise((resolve) => raw.child.once("exit", resolve))
    const total = [...counts.values()].reduce((a, b) => a + b, 0)
    // The report: how many generated cases of each kind reached the agent.
    console.log(`agent fuzz: ${total} cases, ${probes} valid probes\n${[...counts].sort().map(([k, n]) => `  ${n}\t${k}`).join("\n")}`)
  })

  it("generated bad traffic: exactly the right error or none, and the next request still answered", async () => {
    await FastCheck.assert(FastCheck.asyncProperty(anyCase, check), { numRuns: 1000 })
  }, 60_000)

  it("one line over the cap (16 MiB) is answered -32600 once, and the connection goes on", async () => {
    const line = Buffer.alloc(DEFAULT_MAX_LINE_BYTES + 1024, 0x61)
    await check({ kind: "line over the cap", lines: [line], replies: [{ id: null, code: INVALID_REQUEST }] })
  }, 30_000)

  it("cancel for an unknown session is ignored (no reply); close twice succeeds both times", async () => {
    await check({ kind: "cancel of an unknown session", lines: [JSON.stringify({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "nope" } })], replies: [] })
    const id = freshId()
    raw.write(`${req(id, "session/new", { cwd: "/tmp", mcpServers: [] })}\n`)
    await raw.until("session/new", () => raw.lines.some((l) => parse(l)?.id === id))
    const sessionId = raw.lines.map(parse).find((m) => m?.id === id).result.sessionId
    for (const _ of [1, 2]) {
      const closeId = freshId()
      raw.write(`${req(closeId, "session/close", { sessionId })}\n`)
      await raw.until("session/close", () => raw.lines.some((l) => parse(l)?.id === closeId))
      expect(raw.lines.map(parse).find((m) => m?.id === closeId)).toEqual({ jsonrpc: "2.0", id: closeId, result: {} })
    }
    // A closed session is not found for a prompt.
    await check({ kind: "prompt to a closed session", lines: [req("closed-prompt", "session/prompt", { sessionId, prompt: [{ type: "text", text: "true" }] })], replies: [{ id: "closed-prompt", code: NO_RESOURCE }] })
  })

  it("two prompts at once in one session queue: the second runs after the first", async () => {
    const from = raw.lines.length
    raw.write(`${req("first", "session/prompt", { sessionId: known.sessionId, prompt: [{ type: "text", text: "echo first; sleep 0.3; echo first-done" }] })}\n`)
    raw.write(`${req("second", "session/prompt", { sessionId: known.sessionId, prompt: [{ type: "text", text: "echo second" }] })}\n`)
    await raw.until("both answers", () => ["first", "second"].every((id) => raw.lines.slice(from).some((l) => parse(l)?.id === id)))
    const messages = raw.lines.slice(from).map(parse)
    const firstAnswer = messages.findIndex((m) => m.id === "first")
    const secondAnswer = messages.findIndex((m) => m.id === "second")
    expect(messages[firstAnswer].result).toEqual({ stopReason: "end_turn" })
    expect(messages[secondAnswer].result).toEqual({ stopReason: "end_turn" })
    expect(firstAnswer).toBeLessThan(secondAnswer)
    const updates = messages.filter((m) => m.method === "session/update").map((m) => m.params)
    const cards = cardsOf(updates)
    expect(cards.map((c) => c.output)).toEqual(["first\nfirst-done\n", "second\n"])
    // The second card opens only after the first turn answered.
    const secondStart = messages.findIndex((m) => m.params?.update?.sessionUpdate === "tool_call" && m.params.update.toolCallId === cards[1]!.toolCallId)
    expect(secondStart).toBeGreaterThan(firstAnswer)
  })
})
