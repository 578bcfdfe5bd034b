/**
 * The wire checker the e2e suites rely on must itself catch what it claims to catch: the schema's
 * top-level union admits any extension message, so a checker that only used it would pass
 * anything.
 */
import { describe, expect, it } from "@effect/vitest"
import { protocolViolations } from "../support/agentProcess.js"

const sent = [
  JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }),
  JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: "s", prompt: [] } })
]

const update = (u: unknown) => JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: u } })
const goodUpdate = update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } })

describe("protocolViolations", () => {
  it("accepts valid agent messages", () => {
    const stdoutLines = [
      goodUpdate,
      JSON.stringify({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn" } }),
      JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } })
    ]
    expect(protocolViolations({ stdoutLines, stdinLines: sent }, { updates: [{} as never] })).toEqual([])
  })

  it.each([
    ["a non-JSON line", "hello from a stray console.log"],
    ["a wrong jsonrpc version", JSON.stringify({ jsonrpc: "1.0", id: 2, result: { stopReason: "end_turn" } })],
    ["an invalid update", update({ sessionUpdate: "tool_call_update", toolCallId: "t", status: "bogus" })],
    ["an invalid prompt result", JSON.stringify({ jsonrpc: "2.0", id: 2, result: { stopReason: "whenever" } })],
    ["a result for no request", JSON.stringify({ jsonrpc: "2.0", id: 99, result: {} })],
    ["an unexpected notification", JSON.stringify({ jsonrpc: "2.0", method: "_dsh/noise", params: {} })],
    ["a malformed error", JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: "bad" } })]
  ])("rejects %s", (_, line) => {
    expect(protocolViolations({ stdoutLines: [line], stdinLines: sent })).not.toEqual([])
  })

  it("notices session/updates the SDK did not deliver", () => {
    expect(protocolViolations({ stdoutLines: [goodUpdate, goodUpdate], stdinLines: [] }, { updates: [{} as never] }))
      .toEqual(["the SDK handler received 1 session/update notifications, the agent wrote 2"])
  })
})
