/**
 * ACP v1 params of the persisted-session methods (`session/load`, `session/resume`,
 * `session/list`, `session/delete`), as the official `schema/v1/schema.json` defines them;
 * decoded at the JSON-RPC edge like `Wire`'s.
 */
import * as Schema from "effect/Schema"
import { AbsolutePath, lenient, Meta, SessionId } from "./Wire.js"

const meta = lenient(Meta)
const listOrEmpty = <A, I>(item: Schema.Schema<A, I, never>) =>
  Schema.optionalWith(Schema.Array(item), { nullable: true, default: () => [] })

/** `session/load` (behind `loadSession`): replays the conversation, then accepts prompts. */
export const LoadSessionParams = Schema.Struct({
  sessionId: SessionId,
  cwd: AbsolutePath,
  /** Accepted and not used, as on `session/new`. */
  mcpServers: listOrEmpty(Schema.Unknown),
  additionalDirectories: listOrEmpty(AbsolutePath),
  _meta: meta
})
export type LoadSessionParams = typeof LoadSessionParams.Type

/** `session/resume` (behind `sessionCapabilities.resume`): the same, without the replay. */
export const ResumeSessionParams = LoadSessionParams

/** `session/list` (behind `sessionCapabilities.list`). */
export const ListSessionsParams = Schema.Struct({
  cwd: Schema.optionalWith(Schema.NullOr(AbsolutePath), { exact: true }),
  cursor: Schema.optionalWith(Schema.NullOr(Schema.String), { exact: true }),
  _meta: meta
})
export type ListSessionsParams = typeof ListSessionsParams.Type

/** `session/delete` (behind `sessionCapabilities.delete`). */
export const DeleteSessionParams = Schema.Struct({
  sessionId: SessionId,
  _meta: meta
})

export const Method = {
  sessionLoad: "session/load",
  sessionResume: "session/resume",
  sessionList: "session/list",
  sessionDelete: "session/delete"
} as const
