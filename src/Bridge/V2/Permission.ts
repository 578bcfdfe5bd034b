/**
 * `session/request_permission` in v2: the request names what it is about as a subject. A command
 * is a `command` subject (the command, its absolute cwd, its tool call and its terminal, which the
 * v2 mapper opened with the pending call); anything else the `tool_call` subject.
 */
import * as Effect from "effect/Effect"
import { isAbsolute } from "node:path"
import type { PermissionDecision } from "../../Harness/Harness.js"
import { type CallIntent, callContent } from "../../Presentation/Intent.js"
import type { Peer } from "../JsonRpc.js"
import { askWith, OPTIONS } from "../Permission.js"
import { textContent } from "./SessionUpdate.js"

const subjectOf = (callId: string, presentation: CallIntent) =>
  presentation._tag === "Terminal" && isAbsolute(presentation.cwd)
    ? { type: "command", command: presentation.title, cwd: presentation.cwd, toolCallId: callId, terminalId: callId }
    : {
      type: "tool_call",
      toolCall: {
        toolCallId: callId,
        title: presentation.title,
        kind: presentation.kind,
        status: "pending",
        content: callContent(presentation).map((c) => textContent(c.text)),
        ...(presentation.input === undefined ? {} : { rawInput: presentation.input })
      }
    }

export const requestParams = (sessionId: string, callId: string, presentation: CallIntent) => ({
  sessionId,
  title: presentation._tag === "Terminal" ? `Run ${presentation.title}` : presentation.title,
  subject: subjectOf(callId, presentation),
  options: OPTIONS
})

/** Asks a v2 client before running a call. */
export const ask = (peer: Peer, sessionId: string) =>
  (request: { readonly callId: string; readonly presentation: CallIntent }): Effect.Effect<PermissionDecision> =>
    askWith(peer, requestParams(sessionId, request.callId, request.presentation))
