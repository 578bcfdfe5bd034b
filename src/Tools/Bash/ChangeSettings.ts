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
  /** False: a git status before and after every call, no watcher (`DSH_ACP_DIFFS_WATCH=0`). */
  readonly watch?: boolean
}

/**
 * The feature's switch from the environment: on unless `DSH_ACP_DIFFS` is `0`, `false`, `off` or
 * `no`. `--no-diffs` (parsed by the command line) wins over it.
 */
export const enabledFromEnv = (env: Readonly<Record<string, string | undefined>> = process.env): boolean => !isOff(env["DSH_ACP_DIFFS"])

/**
 * Whether a session may watch its work trees (inotify) to skip `git status` while nothing changed:
 * yes unless `DSH_ACP_DIFFS_WATCH` is `0`, `false`, `off` or `no` (for a file system whose changes
 * inotify does not see, such as a network mount written by another machine).
 */
export const watchFromEnv = (env: Readonly<Record<string, string | undefined>> = process.env): boolean => !isOff(env["DSH_ACP_DIFFS_WATCH"])

const isOff = (raw: string | undefined): boolean => {
  const value = raw?.trim().toLowerCase()
  return value === "0" || value === "false" || value === "off" || value === "no"
}

/** The snapshot budget from `DSH_ACP_DIFFS_BUDGET_MS` (a positive number of ms), else {@link DEFAULT_BUDGET_MS}. */
export const budgetFromEnv = (env: Readonly<Record<string, string | undefined>> = process.env): number => {
  const value = Number(env["DSH_ACP_DIFFS_BUDGET_MS"])
  return Number.isFinite(value) && value > 0 ? value : DEFAULT_BUDGET_MS
}

/**
 * The switch, budget and watching of every session's tracker. By default from the environment
 * (`DSH_ACP_DIFFS`, `DSH_ACP_DIFFS_BUDGET_MS`, `DSH_ACP_DIFFS_WATCH`); the command provides `--no-diffs`.
 */
export class Settings extends Context.Reference<Settings>()("dsh-acp/Tools/ChangeTracker/Settings", {
  defaultValue: (): SettingsValue => ({ enabled: enabledFromEnv(), budgetMs: budgetFromEnv(), watch: watchFromEnv() })
}) {}

