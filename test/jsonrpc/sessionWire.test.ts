/**
 * The persisted-session params against the official ACP v1 schema: each declares only the official
 * request's fields and all of its required ones, each method is an agent method there, and what
 * `initialize` advertises validates as `AgentCapabilities`.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Persistence from "../../src/Bridge/Persistence.js"
import * as SessionWire from "../../src/Bridge/SessionWire.js"
import { acpSchema, validateAcp } from "../support/acpSchema.js"

type Def = { properties?: Record<string, unknown>; required?: Array<string>; "x-method"?: string; "x-side"?: string }
const def = (name: string): Def => acpSchema.$defs[name] as Def

describe("SessionWire matches the official ACP v1 schema", () => {
  const pairs: Array<[string, { readonly fields: Record<string, unknown> }, string]> = [
    ["LoadSessionParams", SessionWire.LoadSessionParams, "LoadSessionRequest"],
    ["ResumeSessionParams", SessionWire.ResumeSessionParams, "ResumeSessionRequest"],
    ["ListSessionsParams", SessionWire.ListSessionsParams, "ListSessionsRequest"],
    ["DeleteSessionParams", SessionWire.DeleteSessionParams, "DeleteSessionRequest"]
  ]
  for (const [ours, schema, official] of pairs) {
    it(`${ours} declares only ${official} fields, and all of its required ones`, () => {
      const declared = Object.keys(schema.fields)
      for (const field of declared) expect(Object.keys(def(official).properties ?? {}), `${ours}.${field}`).toContain(field)
      for (const field of def(official).required ?? []) expect(declared, `${official}.${field}`).toContain(field)
    })
  }

  it("every method is an agent method of the official schema", () => {
    const sides = new Map(Object.values(acpSchema.$defs as Record<string, Def>).filter((d) => d["x-method"] !== undefined).map((d) => [d["x-method"]!, d["x-side"]]))
    for (const method of Object.values(SessionWire.Method)) expect(sides.get(method), method).toBe("agent")
  })

  it("the advertised capabilities validate", () => {
    expect(validateAcp("AgentCapabilities", { ...Persistence.capabilities, promptCapabilities: { image: false, audio: false, embeddedContext: false } })).toEqual([])
    expect(Object.keys(def("SessionCapabilities").properties ?? {})).toEqual(expect.arrayContaining(Object.keys(Persistence.capabilities.sessionCapabilities)))
  })

  it("decodes what a client sends; a relative cwd is refused", () => {
    const decode = Schema.decodeUnknownEither(SessionWire.LoadSessionParams)
    expect(Either.isRight(decode({ sessionId: "dsh-1", cwd: "/p", mcpServers: [] }))).toBe(true)
    expect(Either.isRight(decode({ sessionId: "dsh-1", cwd: "/p", mcpServers: null }))).toBe(true)
    expect(Either.isLeft(decode({ sessionId: "dsh-1", cwd: "p", mcpServers: [] }))).toBe(true)
    const list = Schema.decodeUnknownEither(SessionWire.ListSessionsParams)
    expect(Either.isRight(list({}))).toBe(true)
    expect(Either.isRight(list({ cwd: null, cursor: null }))).toBe(true)
  })
})
