/**
 * The JSON-RPC 2.0 messages as the peer (`JsonRpc`) reads and writes them: the error codes and
 * `RpcError`, what an incoming line is (request, notification, response, or invalid and why), and
 * the lines of a response. No state: the peer's bookkeeping stays in `JsonRpc`.
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Exit from "effect/Exit"
import * as ParseResult from "effect/ParseResult"

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** ACP: the request was cancelled (`$/cancel_request`, or a handler chose to say so). */
  RequestCancelled: -32800,
  /** ACP: authentication required. */
  AuthRequired: -32000,
  /** ACP: resource (e.g. session) not found. */
  ResourceNotFound: -32002
} as const

/** A JSON-RPC error: what a handler fails with to answer a specific code, and what `request` fails with. */
export class RpcError extends Data.TaggedError("RpcError")<{
  readonly code: number
  readonly message: string
  readonly data?: unknown
}> {
  static invalidParams(message: string, data?: unknown): RpcError {
    return make_(ErrorCode.InvalidParams, message, data)
  }
  static internal(message: string, data?: unknown): RpcError {
    return make_(ErrorCode.InternalError, message, data)
  }
  static requestCancelled(message = "Request cancelled", data?: unknown): RpcError {
    return make_(ErrorCode.RequestCancelled, message, data)
  }
  static authRequired(message = "Authentication required", data?: unknown): RpcError {
    return make_(ErrorCode.AuthRequired, message, data)
  }
  static resourceNotFound(message = "Resource not found", data?: unknown): RpcError {
    return make_(ErrorCode.ResourceNotFound, message, data)
  }
}

export const make_ = (code: number, message: string, data: unknown): RpcError =>
  data === undefined ? new RpcError({ code, message }) : new RpcError({ code, message, data })

/** Ids are echoed exactly as received; `null` is legal (if discouraged) in JSON-RPC 2.0. */
export type RequestId = string | number | null

// ---------------------------------------------------------------------------------------------
// Wire shapes

export type Json = unknown

export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

export const isId = (u: unknown): u is RequestId =>
  typeof u === "string" || (typeof u === "number" && Number.isFinite(u)) || u === null

/** What a parsed line is, decided once so every branch below works on a known shape. */
export type Incoming =
  | { readonly _tag: "Request"; readonly id: RequestId; readonly method: string; readonly params: Json }
  | { readonly _tag: "Notification"; readonly method: string; readonly params: Json }
  | { readonly _tag: "Response"; readonly id: RequestId; readonly exit: Exit.Exit<Json, RpcError> }
  | { readonly _tag: "Invalid"; readonly id: RequestId; readonly reason: string }

const invalid = (reason: string, id: RequestId = null): Incoming => ({ _tag: "Invalid", id, reason })

export const classify = (msg: unknown): Incoming => {
  if (Array.isArray(msg)) return invalid("batches are not supported")
  if (!isRecord(msg)) return invalid(`expected an object, got ${msg === null ? "null" : typeof msg}`)
  const id = "id" in msg && isId(msg.id) ? msg.id : null
  if (msg.jsonrpc !== "2.0") return invalid(`"jsonrpc" must be "2.0"`, id)
  if ("id" in msg && !isId(msg.id)) return invalid(`"id" must be a string, a number or null`)
  if ("method" in msg) {
    if (typeof msg.method !== "string") return invalid(`"method" must be a string`, id)
    const params = msg.params
    if (params !== undefined && typeof params !== "object") {
      return invalid(`"params" must be an object or an array`, id)
    }
    if ("result" in msg || "error" in msg) return invalid(`a request has no "result" or "error"`, id)
    return "id" in msg
      ? { _tag: "Request", id, method: msg.method, params: params ?? {} }
      : { _tag: "Notification", method: msg.method, params: params ?? {} }
  }
  if ("id" in msg && ("result" in msg) !== ("error" in msg)) {
    if ("result" in msg) return { _tag: "Response", id, exit: Exit.succeed(msg.result) }
    const error = msg.error
    if (isRecord(error) && typeof error.code === "number" && typeof error.message === "string") {
      return { _tag: "Response", id, exit: Exit.fail(make_(error.code, error.message, error.data)) }
    }
    return { _tag: "Response", id, exit: Exit.fail(RpcError.internal("Malformed error response", error)) }
  }
  return invalid(`expected a request, a notification or a response`, id)
}

export const errorLine = (id: RequestId, error: RpcError): string => {
  const body: Record<string, unknown> = { code: error.code, message: error.message }
  if (error.data !== undefined) body.data = error.data
  try {
    return JSON.stringify({ jsonrpc: "2.0", id, error: body })
  } catch {
    return JSON.stringify({ jsonrpc: "2.0", id, error: { code: error.code, message: error.message } })
  }
}

export const resultLine = (id: RequestId, result: unknown): string => {
  try {
    const line = JSON.stringify({ jsonrpc: "2.0", id, result: result === undefined ? null : result })
    if (line !== undefined) return line
  } catch {
    // fall through: a result that does not serialize is our bug, reported as such
  }
  return errorLine(id, RpcError.internal("Internal error: result is not serializable"))
}

/** `cwd: Expected an absolute path; sessionId: is missing` — short enough for an editor's error toast. */
export const formatParseError = (error: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const shown = issues.slice(0, 3).map((issue) =>
    issue.path.length === 0 ? issue.message : `${issue.path.map(String).join(".")}: ${issue.message}`
  )
  if (issues.length > 3) shown.push(`(${issues.length - 3} more)`)
  return shown.join("; ")
}

/** First line of a defect's message, bounded: enough to act on, never a stack. */
export const shortDefect = (cause: Cause.Cause<unknown>): string => {
  const squashed = Cause.squash(cause)
  const text = squashed instanceof Error ? squashed.message : String(squashed)
  const first = (text.split("\n")[0] ?? "").slice(0, 200)
  return first.length > 0 ? `Internal error: ${first}` : "Internal error"
}

export const idKey = (id: RequestId): string => (typeof id === "string" ? `s:${id}` : `n:${String(id)}`)
