/**
 * ACP v1 params the agent receives, as Schemas decoded at the JSON-RPC edge.
 *
 * Field names follow the official `schema/v1/schema.json` of `@agentclientprotocol/sdk` (a test
 * checks them). ACP evolves by adding fields and `_meta` anywhere, so unknown fields never make a
 * message fail; where the official schema marks a field `x-deserialize-default-on-error` (the
 * client capabilities, `_meta`), a malformed value reads as absent instead of failing the request —
 * a client with one odd capability flag must still be able to start a session.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isAbsolute } from "node:path"

/** The protocol version this agent speaks. */
export const PROTOCOL_VERSION = 1

/**
 * A value decoded with `schema` when it fits, absent when it does not (ACP's
 * `x-deserialize-default-on-error`). A property signature: use it directly as a struct field.
 */
export const lenient = <A, I>(schema: Schema.Schema<A, I, never>) => {
  // Compiled when a message first carries the field, not when the Schema is built at load.
  let decode: ((u: unknown) => Either.Either<A, ParseResult.ParseError>) | undefined
  return Schema.optionalWith(
    Schema.transformOrFail(Schema.Unknown, Schema.UndefinedOr(Schema.typeSchema(schema)), {
      strict: true,
      decode: (u) => ParseResult.succeed(Either.getOrUndefined((decode ??= Schema.decodeUnknownEither(schema))(u))),
      encode: (a) => ParseResult.succeed(a)
    }),
    { exact: true }
  )
}

const UnknownRecord = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** ACP's extension point; allowed on every object. Not interpreted here (Capabilities reads `clientCapabilities._meta`). */
export const Meta = UnknownRecord
export type Meta = typeof Meta.Type

const meta = lenient(Meta)

export const AbsolutePath = Schema.String.pipe(
  Schema.filter((s) => isAbsolute(s) || `Expected an absolute path, got ${JSON.stringify(s)}`),
  Schema.annotations({ identifier: "AbsolutePath" })
)

export const SessionId = Schema.String.pipe(Schema.annotations({ identifier: "SessionId" }))

/** `null` and absence both mean an empty list (ACP's `x-deserialize-default-on-null`). */
const listOrEmpty = <A, I>(item: Schema.Schema<A, I, never>) =>
  Schema.optionalWith(Schema.Array(item), { nullable: true, default: () => [] })

// ---------------------------------------------------------------------------------------------
// initialize

export const FileSystemCapabilities = Schema.Struct({
  readTextFile: lenient(Schema.Boolean),
  writeTextFile: lenient(Schema.Boolean),
  _meta: meta
})

/**
 * What the client can do. Fields this agent does not read (`session`, `auth`, `elicitation`, and
 * whatever comes next) are kept as they were sent.
 */
export const ClientCapabilities = Schema.Struct(
  {
    fs: lenient(FileSystemCapabilities),
    terminal: lenient(Schema.Boolean),
    _meta: meta
  },
  UnknownRecord
)
export type ClientCapabilities = typeof ClientCapabilities.Type

export const Implementation = Schema.Struct({
  name: Schema.String,
  version: Schema.String,
  title: lenient(Schema.String),
  _meta: meta
})

export const InitializeParams = Schema.Struct({
  protocolVersion: Schema.Int.pipe(Schema.between(0, 65535)),
  clientCapabilities: lenient(ClientCapabilities),
  clientInfo: lenient(Implementation),
  _meta: meta
})
export type InitializeParams = typeof InitializeParams.Type

// ---------------------------------------------------------------------------------------------
// authenticate

export const AuthenticateParams = Schema.Struct({
  methodId: Schema.String,
  _meta: meta
})
export type AuthenticateParams = typeof AuthenticateParams.Type

// ---------------------------------------------------------------------------------------------
// session/new

export const NewSessionParams = Schema.Struct({
  cwd: AbsolutePath,
  /** Accepted and not used: this agent brings its own tools. Entries are not checked. */
  mcpServers: listOrEmpty(Schema.Unknown),
  additionalDirectories: listOrEmpty(AbsolutePath),
  _meta: meta
})
export type NewSessionParams = typeof NewSessionParams.Type

// ---------------------------------------------------------------------------------------------
// session/prompt

export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String,
  annotations: Schema.optional(Schema.Unknown),
  _meta: meta
})
export type TextBlock = typeof TextBlock.Type

/** Any other block (`image`, `audio`, `resource`, `resource_link`, …), kept whole for the harness to judge. */
export const OtherBlock = Schema.Struct(
  {
    type: Schema.String.pipe(
      Schema.filter((t) => t !== "text" || `a "text" block needs a "text" string`)
    )
  },
  UnknownRecord
)
export type OtherBlock = typeof OtherBlock.Type

export const ContentBlock = Schema.Union(TextBlock, OtherBlock)
export type ContentBlock = typeof ContentBlock.Type

export const isTextBlock = (block: ContentBlock): block is TextBlock => block.type === "text"

export const PromptParams = Schema.Struct({
  sessionId: SessionId,
  prompt: Schema.Array(ContentBlock),
  _meta: meta
})
export type PromptParams = typeof PromptParams.Type

// ---------------------------------------------------------------------------------------------
// session/cancel (notification), session/close (request, behind `sessionCapabilities.close`)

export const CancelParams = Schema.Struct({
  sessionId: SessionId,
  _meta: meta
})
export type CancelParams = typeof CancelParams.Type

export const CloseSessionParams = Schema.Struct({
  sessionId: SessionId,
  _meta: meta
})
export type CloseSessionParams = typeof CloseSessionParams.Type

// ---------------------------------------------------------------------------------------------
// session/set_mode, session/set_config_option

export const SetSessionModeParams = Schema.Struct({
  sessionId: SessionId,
  modeId: Schema.String,
  _meta: meta
})
export type SetSessionModeParams = typeof SetSessionModeParams.Type

/** A `value_id` (a string; `type` absent or anything but `boolean`) or a boolean (`type: "boolean"`). */
export const SetSessionConfigOptionParams = Schema.Struct({
  sessionId: SessionId,
  configId: Schema.String,
  type: Schema.optional(Schema.String),
  value: Schema.Union(Schema.String, Schema.Boolean),
  _meta: meta
})
export type SetSessionConfigOptionParams = typeof SetSessionConfigOptionParams.Type

/** `$/cancel_request` (protocol level); the JSON-RPC peer handles it itself. */
export const CancelRequestParams = Schema.Struct({
  requestId: Schema.Union(Schema.String, Schema.Number, Schema.Null),
  _meta: meta
})

/** The method names, as the official schema spells them. */
export const Method = {
  initialize: "initialize",
  authenticate: "authenticate",
  sessionNew: "session/new",
  sessionPrompt: "session/prompt",
  sessionCancel: "session/cancel",
  sessionClose: "session/close",
  sessionSetMode: "session/set_mode",
  sessionSetConfigOption: "session/set_config_option",
  sessionUpdate: "session/update",
  requestPermission: "session/request_permission",
  cancelRequest: "$/cancel_request"
} as const
