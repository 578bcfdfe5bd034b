/** The environment a command sees: secrets scrubbed by name and by value, allow-list, fixed variables. */
import * as Effect from "effect/Effect"
import { describe, expect, it } from "@effect/vitest"
import { Bash } from "../../src/Bash/Bash.js"
import * as BashLive from "../../src/Bash/BashLive.js"
import * as EnvScrub from "../../src/Bash/EnvScrub.js"
import { containmentModes, run } from "./helpers.js"

const pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
const planted: Record<string, string> = {
  MY_API_KEY: "plain-value-1",
  GH_TOKEN: "plain-value-2",
  DB_PASSWORD: "plain-value-3",
  client_secret: "plain-value-4",
  AWS_REGION: "eu-west-1",
  DATABASE_URL: "plain-value-5",
  INNOCENT_GH: `ghp_${"a1B2".repeat(9)}`,
  INNOCENT_PEM: pem,
  INNOCENT_URL: "postgres://u:p@h/db",
  INNOCENT_SK: `sk-${"x".repeat(40)}`,
  INNOCENT_AWS: "AKIAABCDEFGHIJKLMNOP",
  INNOCENT_SLACK: "xoxb-1234567890-abcdef",
  INNOCENT_JWT: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123",
  ALLOWED_TOKEN: "restored-by-allow-list",
  PLAIN_VAR: "https://example.com/path",
  PAGER: "less"
}

describe("environment scrub", () => {
  it("recognises secret names and values", () => {
    const env = EnvScrub.scrub(planted, { allow: ["ALLOWED_TOKEN"] })
    expect(Object.keys(env).sort()).toEqual(
      ["ALLOWED_TOKEN", "PLAIN_VAR", ...Object.keys(EnvScrub.fixedVariables)].sort()
    )
    expect(env.PAGER).toBe("cat")
    expect(EnvScrub.isSecretName("github_token")).toBe(true)
    expect(EnvScrub.isSecretName("HOME")).toBe(false)
    expect(EnvScrub.isSecretValue("/usr/local/bin:/usr/bin")).toBe(false)
  })

  for (const { mode, skip } of containmentModes) {
  it.scopedLive.skipIf(skip !== undefined)(`\`env\` in a command shows no secret, an allow-listed one, and the fixed variables (${mode}${skip === undefined ? "" : `: skipped, ${skip}`})`, () =>
    Effect.gen(function*() {
      const saved = { ...process.env }
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        for (const k of Object.keys(planted)) delete process.env[k]
        Object.assign(process.env, saved)
      }))
      Object.assign(process.env, planted)
      const bash = yield* Effect.provide(Bash, BashLive.layer({ envAllow: ["ALLOWED_TOKEN"], containment: mode }))
      const s = yield* bash.session({ cwd: "/tmp" })
      const r = yield* run(s, { command: "env" })
      for (const [name, value] of Object.entries(planted)) {
        if (name === "PAGER") {
          expect(r.output).not.toContain("PAGER=less")
        } else if (name === "ALLOWED_TOKEN" || name === "PLAIN_VAR") {
          expect(r.output).toContain(`${name}=${value}`)
        } else {
          expect(r.output).not.toContain(`${name}=`)
          expect(r.output).not.toContain(value.split("\n")[0])
        }
      }
      for (const [name, value] of Object.entries(EnvScrub.fixedVariables)) {
        expect(r.output).toContain(`\n${name}=${value}\n`)
      }
    }))
  }
})
