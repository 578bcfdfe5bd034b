/**
 * A provider's `@effect/ai` stream parts as short strings (`text-delta:Hi`, `tool-call:id:name:{…}`,
 * `finish:stop`), without their defaulted bookkeeping, for readable assertions in the provider tests.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

export const simple = (parts: ReadonlyArray<Json>): Array<string> =>
  parts.filter((p) => p.type !== "response-metadata").map((p) => {
    switch (p.type) {
      case "text-delta":
      case "reasoning-delta":
      case "tool-params-delta":
        return `${p.type}:${p.delta}`
      case "tool-call":
        return `tool-call:${p.id}:${p.name}:${JSON.stringify(p.params)}`
      case "tool-params-start":
        return `tool-params-start:${p.id}:${p.name}`
      case "finish":
        return `finish:${p.reason}`
      case "error":
        return `error:${JSON.stringify(p.error)}`
      default:
        return p.type
    }
  })
