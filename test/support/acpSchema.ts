/**
 * Validates a JSON value against a definition of the official ACP v1 JSON Schema (the file the
 * `@agentclientprotocol/sdk` package ships), so tests check every message against the protocol
 * itself rather than against our own idea of it.
 *
 * ```ts
 * expect(validateAcp("SessionNotification", params)).toEqual([])
 * assertAcp("InitializeResponse", result)   // throws with readable errors
 * ```
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"

const require = createRequire(import.meta.url)
const schemaPath = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json")

/** The parsed schema: `{ $schema, title, anyOf, $defs }` (draft 2020-12, every type under `$defs`). */
export const acpSchema: { readonly $defs: Record<string, unknown> } = JSON.parse(readFileSync(schemaPath, "utf8"))

const SCHEMA_ID = "acp-v1"

// `strict: false`: the schema carries vendor keywords (`x-side`, `x-deserialize-default-on-error`,
// `discriminator` without Ajv's discriminator mode) that Ajv would otherwise reject.
const ajv = new Ajv2020({ strict: false, allErrors: true })
// The numeric formats (`int64`, `uint16`, …) are Rust type hints; the `type`/`minimum` keywords next
// to them carry the real constraints, so they are accepted as-is. `uri` is checked loosely.
for (const format of ["double", "int32", "int64", "uint16", "uint32", "uint64"]) ajv.addFormat(format, true)
ajv.addFormat("uri", /^[a-zA-Z][a-zA-Z0-9+.-]*:/)
ajv.addSchema(acpSchema, SCHEMA_ID)

const validators = new Map<string, ValidateFunction>()

const validatorFor = (defName: string): ValidateFunction => {
  let validate = validators.get(defName)
  if (validate === undefined) {
    if (!(defName in acpSchema.$defs)) throw new Error(`ACP schema has no definition "${defName}"`)
    validate = ajv.getSchema(`${SCHEMA_ID}#/$defs/${defName}`)
    if (validate === undefined) throw new Error(`could not compile ACP definition "${defName}"`)
    validators.set(defName, validate)
  }
  return validate
}

/** The definition names, e.g. `SessionNotification`, `ToolCallUpdate`, `InitializeRequest`. */
export const acpDefinitions = (): ReadonlyArray<string> => Object.keys(acpSchema.$defs)

/** Errors of `value` against the ACP definition `defName`, one readable line each; `[]` when valid. */
export const validateAcp = (defName: string, value: unknown): ReadonlyArray<string> => {
  const validate = validatorFor(defName)
  if (validate(value)) return []
  return (validate.errors ?? []).map((e) =>
    `${e.instancePath || "/"} ${e.message ?? "is invalid"}${e.params !== undefined ? ` ${JSON.stringify(e.params)}` : ""}`
  )
}

// ACP v2 (draft), for connections that negotiated it: its own schema, its own validators.
const schemaV2Path = require.resolve("@agentclientprotocol/sdk/schema/v2/schema.json")
export const acpSchemaV2: { readonly $defs: Record<string, unknown> } = JSON.parse(readFileSync(schemaV2Path, "utf8"))
const SCHEMA_V2_ID = "acp-v2"
// v2 adds string formats v1 does not use (elicitation patterns, session timestamps): annotations here.
for (const format of ["regex", "date-time"]) ajv.addFormat(format, true)
ajv.addSchema(acpSchemaV2, SCHEMA_V2_ID)
const validatorsV2 = new Map<string, ValidateFunction>()

/** Errors of `value` against the ACP v2 definition `defName`, one readable line each; `[]` when valid. */
export const validateAcpV2 = (defName: string, value: unknown): ReadonlyArray<string> => {
  let validate = validatorsV2.get(defName)
  if (validate === undefined) {
    if (!(defName in acpSchemaV2.$defs)) throw new Error(`ACP v2 schema has no definition "${defName}"`)
    validate = ajv.getSchema(`${SCHEMA_V2_ID}#/$defs/${defName}`)
    if (validate === undefined) throw new Error(`could not compile ACP v2 definition "${defName}"`)
    validatorsV2.set(defName, validate)
  }
  if (validate(value)) return []
  return (validate.errors ?? []).map((e) =>
    `${e.instancePath || "/"} ${e.message ?? "is invalid"}${e.params !== undefined ? ` ${JSON.stringify(e.params)}` : ""}`
  )
}

/** Throws an Error listing every violation when `value` is not a valid `defName`. */
export const assertAcp = (defName: string, value: unknown): void => {
  const errors = validateAcp(defName, value)
  if (errors.length > 0) {
    throw new Error(`not a valid ACP ${defName}:\n  ${errors.join("\n  ")}\nvalue: ${JSON.stringify(value).slice(0, 2000)}`)
  }
}
