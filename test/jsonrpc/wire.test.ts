import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as JsonRpc from "../../src/Bridge/JsonRpc.js"
import * as Wire from "../../src/Bridge/Wire.js"
import { acpSchema, validateAcp } from "../support/acpSchema.js"

type Def = { properties?: Record<string, unknown>; required?: Array<string>; "x-method"?: string; "x-side"?: string }
const def = (name: string): Def => acpSchema.$defs[name] as Def

const fieldsOf = (schema: { readonly fields: Record<string, unknown> }) => Object.keys(schema.fields).sort()

const decode = <A, I>(schema: Schema.Schema<A, I, never>, u: unknown): Either.Either<A, string> =>
  Schema.decodeUnknownEither(schema)(u).pipe(Either.mapLeft(JsonRpc.formatParseError))

describe("Wire Schemas match the official ACP v1 schema", () => {
  const pairs: Array<[string, { readonly fields: Record<string, unknown> }, string]> = [
    ["InitializeParams", Wire.InitializeParams, "InitializeRequest"],
    ["ClientCapabilities", Wire.ClientCapabilities, "ClientCapabilities"],
    ["FileSystemCapabilities", Wire.FileSystemCapabilities, "FileSystemCapabilities"],
    ["Implementation", Wire.Implementation, "Implementation"],
    ["AuthenticateParams", Wire.AuthenticateParams, "AuthenticateRequest"],
    ["NewSessionParams", Wire.NewSessionParams, "NewSessionRequest"],
    ["PromptParams", Wire.PromptParams, "PromptRequest"],
    ["TextBlock", Wire.TextBlock, "TextContent"],
    ["CancelParams", Wire.CancelParams, "CancelNotification"],
    ["CloseSessionParams", Wire.CloseSessionParams, "CloseSessionRequest"],
    ["SetSessionModeParams", Wire.SetSessionModeParams, "SetSessionModeRequest"],
    ["CancelRequestParams", Wire.CancelRequestParams, "CancelRequestNotification"]
  ]
  for (const [ours, schema, official] of pairs) {
    it(`${ours} declares only ${official} fields, and all of its required ones`, () => {
      const theirs = def(official)
      // `type` is the ContentBlock discriminator, declared on the union rather than on TextContent.
      const declared = fieldsOf(schema).filter((f) => !(official === "TextContent" && f === "type"))
      for (const field of declared) expect(Object.keys(theirs.properties ?? {}), `${ours}.${field}`).toContain(field)
      for (const field of theirs.required ?? []) expect(declared, `${official}.${field}`).toContain(field)
    })
  }

  it("SetSessionConfigOptionParams declares the request's fields and those of its value variants", () => {
    const theirs = def("SetSessionConfigOptionRequest") as Def & { anyOf?: ReadonlyArray<Def> }
    const known = [
      ...Object.keys(theirs.properties ?? {}),
      ...(theirs.anyOf ?? []).flatMap((variant) => Object.keys(variant.properties ?? {}))
    ]
    for (const field of fieldsOf(Wire.SetSessionConfigOptionParams)) expect(known, field).toContain(field)
    for (const field of theirs.required ?? []) expect(fieldsOf(Wire.SetSessionConfigOptionParams), field).toContain(field)
  })

  it("every method name exists in the official schema; session/close is a stable agent method", () => {
    const methods = new Map(
      Object.values(acpSchema.$defs as Record<string, Def>).filter((d) => d["x-method"] !== undefined).map((d) => [
        d["x-method"]!,
        d["x-side"]
      ])
    )
    for (const method of Object.values(Wire.Method)) expect([...methods.keys()], method).toContain(method)
    expect(methods.get("session/close")).toBe("agent")
    expect(def("CloseSessionRequest").required).toEqual(["sessionId"])
  })
})

describe("Wire Schemas decode what clients send", () => {
  const zedInitialize = {
    protocolVersion: 1,
    clientCapabilities: {
      fs: { readTextFile: true, writeTextFile: true },
      terminal: true,
      auth: { terminal: true },
      _meta: { terminal_output: true, "terminal-auth": true }
    },
    clientInfo: { name: "zed", title: "Zed", version: "0.200.0" }
  }

  it("initialize as Zed sends it, keeping _meta and unread capabilities", () => {
    expect(validateAcp("InitializeRequest", zedInitialize)).toEqual([])
    const decoded = Either.getOrThrow(decode(Wire.InitializeParams, zedInitialize))
    expect(decoded.clientCapabilities?._meta).toEqual({ terminal_output: true, "terminal-auth": true })
    expect(decoded.clientCapabilities?.terminal).toBe(true)
    expect(decoded.clientCapabilities?.auth).toEqual({ terminal: true })
    expect(decoded.clientInfo?.name).toBe("zed")
  })

  it("initialize with odd capabilities still decodes (default on error), a bad version does not", () => {
    const odd = { protocolVersion: 1, clientCapabilities: { terminal: "yes", fs: 3, _meta: [1] }, clientInfo: null, _meta: null }
    const decoded = Either.getOrThrow(decode(Wire.InitializeParams, odd))
    expect(decoded.clientCapabilities?.terminal).toBeUndefined()
    expect(decoded.clientCapabilities?._meta).toBeUndefined()
    expect(decoded.clientInfo).toBeUndefined()
    expect(Either.getOrThrow(decode(Wire.InitializeParams, { protocolVersion: 1 })).protocolVersion).toBe(1)
    expect(decode(Wire.InitializeParams, { protocolVersion: "1" })).toEqual(Either.left(expect.stringMatching(/^protocolVersion: /)))
    expect(decode(Wire.InitializeParams, { protocolVersion: 1.5 })).toEqual(Either.left(expect.stringMatching(/^protocolVersion: /)))
    expect(decode(Wire.InitializeParams, {})).toEqual(Either.left("protocolVersion: is missing"))
  })

  it("session/new needs an absolute cwd; mcpServers accepted unchecked", () => {
    const ok = { cwd: "/home/me/project", mcpServers: [{ name: "x", command: "y", args: [], env: [] }], _meta: { z: 1 }, future: true }
    expect(validateAcp("NewSessionRequest", ok)).toEqual([])
    const decoded = Either.getOrThrow(decode(Wire.NewSessionParams, ok))
    expect(decoded.cwd).toBe("/home/me/project")
    expect(decoded.mcpServers.length).toBe(1)
    expect(decode(Wire.NewSessionParams, { cwd: "project", mcpServers: [] })).toEqual(
      Either.left("cwd: Expected an absolute path, got \"project\"")
    )
    expect(decode(Wire.NewSessionParams, { cwd: "/p", mcpServers: "no" })).toEqual(
      Either.left(expect.stringMatching(/^mcpServers: /))
    )
    expect(Either.getOrThrow(decode(Wire.NewSessionParams, { cwd: "/p", mcpServers: null })).mcpServers).toEqual([])
  })

  it("session/prompt: text blocks typed, other blocks passed through whole", () => {
    const params = {
      sessionId: "s1",
      prompt: [
        { type: "text", text: "run ls", _meta: { a: 1 } },
        { type: "resource_link", uri: "file:///x", name: "x" },
        { type: "image", data: "AAAA", mimeType: "image/png" }
      ]
    }
    expect(validateAcp("PromptRequest", params)).toEqual([])
    const decoded = Either.getOrThrow(decode(Wire.PromptParams, params))
    expect(decoded.prompt.filter(Wire.isTextBlock).map((b) => b.text)).toEqual(["run ls"])
    expect(decoded.prompt[1]).toEqual({ type: "resource_link", uri: "file:///x", name: "x" })
    expect(decode(Wire.PromptParams, { sessionId: "s1", prompt: [{ type: "text" }] })).toEqual(
      Either.left(expect.stringContaining("prompt.0.text: is missing"))
    )
    expect(decode(Wire.PromptParams, { prompt: [] })).toEqual(Either.left("sessionId: is missing"))
    expect(decode(Wire.PromptParams, { sessionId: "s", prompt: [{ text: "no type" }] })).toEqual(
      Either.left(expect.stringContaining("prompt.0.type"))
    )
  })

  it("cancel, close and authenticate", () => {
    expect(Either.getOrThrow(decode(Wire.CancelParams, { sessionId: "s", extra: 1 }))).toEqual({ sessionId: "s" })
    expect(Either.getOrThrow(decode(Wire.CloseSessionParams, { sessionId: "s" }))).toEqual({ sessionId: "s" })
    expect(Either.getOrThrow(decode(Wire.AuthenticateParams, { methodId: "m" }))).toEqual({ methodId: "m" })
    expect(decode(Wire.CloseSessionParams, {})).toEqual(Either.left("sessionId: is missing"))
    expect(decode(Wire.AuthenticateParams, { methodId: 3 })).toEqual(Either.left(expect.stringMatching(/^methodId: /)))
  })
})
