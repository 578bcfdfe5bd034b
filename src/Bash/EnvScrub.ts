/**
 * The environment a command runs with: the agent's own environment minus secrets, plus a few fixed
 * variables that make tools non-interactive and predictable.
 *
 * A model reads everything a command prints, so `env` must not reveal credentials the agent
 * process happens to hold. Secrets are recognised both by NAME (case-insensitive globs) and by
 * VALUE (well-known token shapes), because many secrets live in innocently named variables
 * (`http_proxy=http://user:pass@…`). An explicit allow-list restores names the user wants passed.
 */

/** Case-insensitive name globs (`*` = any run of characters) of variables removed by default. */
export const secretNameGlobs: ReadonlyArray<string> = [
  "*KEY*",
  "*SECRET*",
  "*TOKEN*",
  "*PASSWORD*",
  "*PASSWD*",
  "*CREDENTIAL*",
  "*PRIVATE*",
  "DATABASE_URL",
  "AWS_*",
  "AZURE_*",
  "GOOGLE_APPLICATION_CREDENTIALS"
]

/** Values that look like secrets, whatever the variable is called. */
export const secretValuePatterns: ReadonlyArray<RegExp> = [
  // PEM private keys (RSA, EC, OPENSSH, PKCS#8, encrypted …)
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/,
  // credentials inside a URL: scheme://user:pass@host
  /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:[^\s/@]+@/i,
  // GitHub tokens: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained
  /\bgh[pousr]_[A-Za-z0-9]{20,}/,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  // OpenAI / Anthropic style keys
  /\bsk-[A-Za-z0-9_-]{16,}/,
  // AWS access key ids
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/,
  // Slack tokens
  /\bxox[a-z]-[A-Za-z0-9-]{10,}/,
  // JWT: two base64url JSON segments and a signature
  /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/
]

/** Always set: no prompt, pager or editor may wait for a human who is not there. */
export const fixedVariables: Readonly<Record<string, string>> = {
  GIT_TERMINAL_PROMPT: "0",
  GIT_EDITOR: "true",
  PAGER: "cat",
  GIT_PAGER: "cat",
  DEBIAN_FRONTEND: "noninteractive",
  npm_config_yes: "true",
  PIP_NO_INPUT: "1"
}

const globToRegExp = (glob: string): RegExp =>
  new RegExp(`^${glob.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`, "i")

const secretNameRegExps = secretNameGlobs.map(globToRegExp)

/** Does this variable name mark a secret? */
export const isSecretName = (name: string): boolean => secretNameRegExps.some((re) => re.test(name))

/** Does this value look like a secret? */
export const isSecretValue = (value: string): boolean => secretValuePatterns.some((re) => re.test(value))

export interface ScrubOptions {
  /** Names kept even when they look secret (exact, case-sensitive). */
  readonly allow?: ReadonlyArray<string>
}

/** The environment for a child: `source` minus secrets (unless allowed), plus {@link fixedVariables}. */
export const scrub = (
  source: Readonly<Record<string, string | undefined>>,
  options: ScrubOptions = {}
): Record<string, string> => {
  const allow = new Set(options.allow ?? [])
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue
    if (!allow.has(name) && (isSecretName(name) || isSecretValue(value))) continue
    env[name] = value
  }
  return { ...env, ...fixedVariables }
}
