/**
 * The switch and budget of the changed-files display, apart from the tracker itself: the command
 * reads them at start, and the tracker's modules (git, files, the card intents) load with the
 * first session, not before `initialize`.
 */
import * as Context from "effect/Context"

export const DEFAULT_BUDGET_MS = 100

export interface SettingsValue {
  /** False: never snapshot (`--no-diffs`, `DSH_ACP_DIFFS=0`). */
  readonly enabled?: boolean
  /** A snapshot (or the after-status) slower than this turns the feature off for the session. */
  readonly budgetMs?: number
}

/**
 * The feature's switch from the environment: on unless `DSH_ACP_DIFFS` is `0`, `false`, `off` or
 * `no`. `--no-diffs` (parsed by the command line) wins over it.
 */
export const enabledFromEnv = (env: Readonly<Record<string, string | undefined>> = process.env): boolean => {
  const value = env["DSH_ACP_DIFFS"]?.trim().toLowerCase()
  return !(value === "0" || value === "false" || value === "off" || value === "no")
}

/** The snapshot budget from `DSH_ACP_DIFFS_BUDGET_MS` (a positive number of ms), else {@link DEFAULT_BUDGET_MS}. */
export const budgetFromEnv = (env: Readonly<Record<string, string | undefined>> = process.env): number => {
  const value = Number(env["DSH_ACP_DIFFS_BUDGET_MS"])
  return Number.isFinite(value) && value > 0 ? value : DEFAULT_BUDGET_MS
}

/**
 * The switch and budget of every session's tracker. By default from the environment
 * (`DSH_ACP_DIFFS`, `DSH_ACP_DIFFS_BUDGET_MS`); the command provides `--no-diffs`.
 */
export class Settings extends Context.Reference<Settings>()("dsh-acp/Tools/ChangeTracker/Settings", {
  defaultValue: (): SettingsValue => ({ enabled: enabledFromEnv(), budgetMs: budgetFromEnv() })
}) {}

