/**
 * `session/request_permission`: how a harness asks the user before running a call. The request
 * never carries terminal content (the wire contract: a client may not know that terminal yet).
 */
import * as Effect from "effect/Effect"
import type { PermissionDecision } from "../Harness/Harness.js"
import type { CallIntent } from "../Presentation/Intent.js"
import { callBody, locationsOf } from "./CardContent.js"
import type { Peer } from "./JsonRpc.js"
import * as Wire from "./Wire.js"

export const OPTIONS = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
  { optionId: "allow_always", name: "Always allow in this session", kind: "allow_always" },
  { optionId: "reject", name: "Reject", kind: "reject_once" }
] as const

export const requestParams = (sessionId: string, callId: string, presentation: CallIntent) => ({
  sessionId,
  toolCall: {
    toolCallId: callId,
    title: presentation.title,
    kind: presentation.kind,
    status: "pending",
    // What the call will do, never a terminal block: a diff call shows its diffs.
    content: callBody(presentation),
    ...locationsOf(presentation.locations),
    ...(presentation.input === undefined ? {} : { rawInput: presentation.input })
  },
  options: OPTIONS
})

/** The decision in a `session/request_permission` answer (the same in v1 and v2); `undefined` when unreadable. */
export const decisionOf = (response: unknown): PermissionDecision | undefined => {
  const outcome = (response as { outcome?: { outcome?: unknown; optionId?: unknown } } | null)?.outcome
  if (outcome?.outcome === "cancelled") return "cancelled"
  if (outcome?.outcome !== "selected") return undefined
  return outcome.optionId === "allow_once" || outcome.optionId === "allow_always" ? outcome.optionId
    : outcome.optionId === "reject" ? "reject" : undefined
}

/**
 * Asks the client with `params` (v1 or v2 shaped); an error or an answer we cannot read counts as
 * a rejection (never run unasked).
 */
export const askWith = (peer: Peer, params: unknown): Effect.Effect<PermissionDecision> =>
  peer.request(Wire.Method.requestPermission, params).pipe(
    Effect.flatMap((response) => {
      const decision = decisionOf(response)
      return decision !== undefined
        ? Effect.succeed(decision)
        : Effect.logWarning(`unreadable permission answer: ${JSON.stringify(response)}`).pipe(Effect.as("reject" as const))
    }),
    Effect.catchAll((error) =>
      Effect.logWarning(`permission request failed: ${error.message}`).pipe(Effect.as("reject" as const))
    )
  )

/** Asks a v1 client before running a call. */
export const ask = (peer: Peer, sessionId: string) =>
  (request: { readonly callId: string; readonly presentation: CallIntent }): Effect.Effect<PermissionDecision> =>
    askWith(peer, requestParams(sessionId, request.callId, request.presentation))
