/**
 * The model harness's default system prompt: where the commands run and what the tools do. It is
 * built once per session (a stable prefix is what providers cache), from facts an embedder can
 * also use in its own prompt (`ModelHarness.layer({ systemPrompt: (ctx) => … })`).
 */

/** What the system prompt may say about the environment. */
export interface Context {
  /** The session's starting directory (absolute). */
  readonly cwd: string
  /** `process.platform`, e.g. `linux`, `darwin`. */
  readonly platform: string
  /** The shell commands run in. */
  readonly shell: string
  /** Today's date, `YYYY-MM-DD`. */
  readonly date: string
  /** The tools offered, by name. */
  readonly tools: ReadonlyArray<string>
}

export const context = (cwd: string, tools: ReadonlyArray<string>): Context => ({
  cwd,
  platform: process.platform,
  shell: "bash (non-interactive: bash --noprofile --norc -c)",
  date: new Date().toISOString().slice(0, 10),
  tools
})

/** The default prompt. */
export const make = (ctx: Context): string =>
  `You are a coding agent working in the user's editor. You act by running bash commands on the user's machine; the user sees each command as a live terminal card.

Environment:
- Working directory: ${ctx.cwd}
- Platform: ${ctx.platform}
- Shell: ${ctx.shell}
- Date: ${ctx.date}

Tools: ${ctx.tools.join(", ")}.
- Bash runs one script and returns its output followed by status lines; the last line says how it ended ([exit code: N] or [killed by signal: NAME]). A \`cd\` persists to later calls; exported variables do not.
- Long-running processes (servers, watchers) go in the background with run_in_background: true; read their new output with BashOutput and stop them with KillBash.
- stdin is closed: use non-interactive flags (--yes, -y, --no-pager).
- The user may reject a command; then it did not run: do not retry it unchanged, ask or take another approach.

Work in small verifiable steps, read files before changing them, and check the result of each command. Answer in concise Markdown; say what you did and what you found.`
