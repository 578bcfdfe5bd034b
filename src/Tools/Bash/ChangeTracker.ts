/**
 * The changed-files display for one session: on or off, the cost guard, and reusing a snapshot
 * while nothing changed.
 *
 * The snapshot before a command is on that command's critical path (it must finish before the
 * command starts), and `git status` in a big repository can take far longer than the command.
 * So each snapshot is timed, and the first one over the budget turns the feature off for the
 * rest of the session, with one log line. The snapshot that went over is still used: its cost is
 * paid, and its comparison runs after the command has been reported.
 *
 * Even a small repository's status is a process (~7 ms of a blocked event loop to spawn it, ~10
 * ms in all), so the tracker keeps, per work tree, the last snapshot it took (a before, or the
 * after-status of the last command that changed something, with the copies a before needs) and
 * the watcher's sequence number when that status began (see WorkTreeWatch, whose module comment
 * has the ordering). Before a command: armed and unchanged since, the kept snapshot is reused (no
 * process). After it: armed and unchanged since its snapshot, it changed nothing (no process).
 * Otherwise a status, as without the watcher. The watcher is set up after the first comparison in
 * a work tree, off the critical path, and lives in the session's scope.
 */
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"
import * as Intent from "../../Presentation/Intent.js"
import { changesAndNext, type FileChanges, noChanges, omittedNote, type Options, type Snapshot, snapshotOrFail } from "./ChangedFiles.js"
import { DEFAULT_BUDGET_MS, Settings } from "./ChangeSettings.js"
import { findWorkTree, live } from "./Git.js"
import * as WorkTreeWatch from "./WorkTreeWatch.js"

/** Work trees watched per session; a session that visits more gets a status per call in the others. */
const MAX_WATCHED_TREES = 4


export interface Config extends Options {
  /** False: never snapshot (`--no-diffs`, `DSH_ACP_DIFFS=0`). */
  readonly enabled?: boolean
  /** A snapshot (or the after-status) slower than this turns the feature off for the session. */
  readonly budgetMs?: number
  /** False: a status before and after every call (no watcher). */
  readonly watch?: boolean
  /** A work tree with more directories than this is not watched. */
  readonly maxWatchedDirectories?: number
}

export interface ChangeTracker {
  /** Before a command runs in `cwd`: None when off, outside a git work tree, or git failed. */
  readonly before: (cwd: string) => Effect.Effect<Option.Option<Snapshot>>
  /** After the command: the files it changed. Never fails (a git failure is logged: no changes). */
  readonly after: (before: Snapshot) => Effect.Effect<FileChanges>
  /** `before`, the command, then `after` unstarted: run it once the command has been reported. */
  readonly around: <A, E, R>(
    cwd: string,
    command: Effect.Effect<A, E, R>
  ) => Effect.Effect<readonly [A, Effect.Effect<FileChanges>], E, R>
  /**
   * The snapshot before a command in `cwd`; the effect it returns gives the files changed since,
   * as a card shows them (nothing when off or outside git). Run that after the command's end.
   */
  readonly since: (cwd: string) => Effect.Effect<Effect.Effect<Intent.ChangedFiles>>
  readonly enabled: Effect.Effect<boolean>
  /** The watcher of the work tree holding `cwd`, if one was set up: for tests and logs. */
  readonly watching: (cwd: string) => Effect.Effect<Option.Option<{ readonly phase: WorkTreeWatch.Phase; readonly directories: number }>>
}


/** The files as a card shows them: diffs, a note for each file without one, a location for each. */
export const present = (changed: FileChanges): Intent.ChangedFiles => ({
  diffs: changed.files.flatMap((f) => (f.diff === undefined ? [] : [{ path: f.path, ...f.diff }])),
  notes: [
    ...changed.files.flatMap((f) => (f.note === undefined ? [] : [Intent.text(`${f.path} (${f.change}): ${f.note}`)])),
    ...(changed.omitted > 0 ? [Intent.text(omittedNote(changed.omitted))] : [])
  ],
  locations: changed.files.map((f) => ({ path: f.path }))
})

type State = { readonly _tag: "On" } | { readonly _tag: "Off"; readonly why: string }

/** A work tree's watcher, in a scope of its own so it can be closed before the session ends. */
interface Watched {
  readonly watch: WorkTreeWatch.WorkTreeWatch
  readonly scope: Scope.CloseableScope
}

/** The snapshot last taken in a work tree, and the watcher's number when its status began. */
interface Kept {
  readonly snap: Snapshot
  readonly seq: number
}

export const make = (config: Config = {}): Effect.Effect<ChangeTracker, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const watches = yield* SynchronizedRef.make<ReadonlyMap<string, Watched>>(new Map())
    const kept = yield* Ref.make<ReadonlyMap<string, Kept>>(new Map())
    const budgetMs = config.budgetMs ?? DEFAULT_BUDGET_MS
    // A snapshot or comparison still running after this long is stopped (and the feature turned off).
    const limitMs = Math.max(1000, budgetMs * 10)
    const state = yield* Ref.make<State>(config.enabled === false ? { _tag: "Off", why: "disabled" } : { _tag: "On" })
    // Work trees where git failed (a repository owned by another user, a broken `.git`): asking
    // again at every call would cost a spawn each time for the same answer.
    const failedRoots = yield* Ref.make<ReadonlySet<string>>(new Set())
    const options: Options = {
      ...(config.git === undefined ? {} : { git: config.git }),
      ...(config.limits === undefined ? {} : { limits: config.limits })
    }

    // Off for the rest of the session: its watches (up to thousands of inotify watches) go too.
    const closeWatches = SynchronizedRef.updateEffect(watches, (m) =>
      Effect.forEach(m.values(), (w) => Scope.close(w.scope, Exit.void), { discard: true }).pipe(Effect.as(new Map())))

    // Only the fiber that flips On → Off logs, so concurrent calls log once; the flip and the
    // close are one uninterruptible step, so an interrupted call cannot leave the watches open.
    const overBudget = (what: string, ms: number) =>
      Ref.modify(state, (s): [boolean, State] =>
        s._tag === "On" ? [true, { _tag: "Off", why: `${what} took ${ms.toFixed(0)} ms` }] : [false, s]
      ).pipe(
        Effect.flatMap((flipped) =>
          flipped
            ? Effect.logWarning(
              `changed files: off for this session: ${what} took ${ms.toFixed(1)} ms (budget ${budgetMs} ms)`
            ).pipe(Effect.zipRight(closeWatches))
            : Effect.void
        ),
        Effect.uninterruptible
      )

    /** Keeps `snap` as current at `seq` (unless a newer one is kept: concurrent calls). */
    const keep = (snap: Snapshot, seq: Option.Option<number>) =>
      Option.isNone(seq) ? Effect.void : Ref.update(kept, (m) =>
        (m.get(snap.root)?.seq ?? -1) > seq.value ? m : new Map(m).set(snap.root, { snap, seq: seq.value }))

    /**
     * The watcher's number once pending events are counted: None when there is no armed watcher
     * (then no waiting either). `snap`: Some only if it is the kept snapshot and still current.
     */
    const watchedNow = (root: string, snap?: Snapshot) =>
      Effect.gen(function*() {
        const watch = (yield* SynchronizedRef.get(watches)).get(root)?.watch
        if (watch === undefined || Option.isNone(yield* watch.current)) return { seq: Option.none<number>(), current: Option.none<Snapshot>() }
        yield* watch.settle
        const seq = yield* watch.current
        const k = (yield* Ref.get(kept)).get(root)
        const current = Option.isSome(seq) && k !== undefined && k.seq === seq.value && (snap === undefined || k.snap === snap)
          ? Option.some(k.snap)
          : Option.none<Snapshot>()
        return { seq, current }
      })

    /** Sets up the work tree's watcher (once, in the session's scope), or a rescan it asks for. */
    const watchLater = (root: string) =>
      config.watch === false ? Effect.void : SynchronizedRef.modifyEffect(watches, (m) =>
        Effect.gen(function*() {
          const existing = m.get(root)
          if (existing !== undefined) return [existing.watch, m] as const
          if (m.size >= MAX_WATCHED_TREES || (yield* Ref.get(state))._tag === "Off" || (yield* Ref.get(failedRoots)).has(root)) {
            return [undefined, m] as const
          }
          const own = yield* Scope.fork(scope, ExecutionStrategy.sequential)
          const watch = yield* Scope.extend(WorkTreeWatch.make(root, options.git ?? live, config.maxWatchedDirectories), own)
          return [watch, new Map(m).set(root, { watch, scope: own })] as const
        })).pipe(Effect.flatMap((watch) => watch === undefined ? Effect.void : watch.refresh))

    const before = (cwd: string): Effect.Effect<Option.Option<Snapshot>> =>
      Effect.gen(function*() {
        if ((yield* Ref.get(state))._tag === "Off") return Option.none()
        const root = yield* findWorkTree(cwd)
        if (Option.isNone(root) || (yield* Ref.get(failedRoots)).has(root.value)) return Option.none()
        const now = yield* watchedNow(root.value)
        if (Option.isSome(now.current)) return now.current
        const started = performance.now()
        const taken = yield* snapshotOrFail(cwd, options).pipe(
          Effect.catchTag("GitError", (e) =>
            Ref.update(failedRoots, (roots) => new Set([...roots, e.root])).pipe(
              Effect.zipRight(Effect.logInfo(`changed files: none for ${e.root} in this session (git status: ${e.message})`)),
              Effect.as(Option.none<Snapshot>())
            )
          ),
          // The budget is checked after the fact; this bounds a git that never ends (a huge home
          // directory as a work tree, a config that includes /dev/zero): interrupting kills it.
          Effect.timeoutTo({ duration: limitMs, onSuccess: Option.some, onTimeout: () => Option.none<Option.Option<Snapshot>>() })
        )
        if (Option.isNone(taken)) {
          yield* overBudget("a git status snapshot (stopped)", performance.now() - started)
          return Option.none()
        }
        if (Option.isSome(taken.value) && taken.value.value.durationMs > budgetMs) {
          yield* overBudget("a git status snapshot", taken.value.value.durationMs)
        }
        if (Option.isSome(taken.value)) yield* keep(taken.value.value, now.seq)
        return taken.value
      })

    const after = (snap: Snapshot): Effect.Effect<FileChanges> =>
      Effect.gen(function*() {
        // The command's last writes are counted before deciding it made none.
        const now = yield* watchedNow(snap.root, snap)
        if (Option.isSome(now.current)) return noChanges
        const started = performance.now()
        const result = yield* changesAndNext(snap, options).pipe(
          Effect.timeoutTo({ duration: limitMs, onSuccess: Option.some, onTimeout: () => Option.none() })
        )
        const ms = performance.now() - started
        if (Option.isNone(result)) {
          yield* overBudget("comparing a git status snapshot (stopped)", ms)
          return noChanges
        }
        if (ms > budgetMs) yield* overBudget("comparing a git status snapshot", ms)
        yield* keep(result.value.next, now.seq)
        yield* watchLater(snap.root)
        return result.value.changes
      }).pipe(
        Effect.catchTag("GitError", (e) =>
          Effect.logDebug(`changed files: none shown (git ${e.args.join(" ")}: ${e.message})`).pipe(Effect.as(noChanges))
        )
      )

    const around = <A, E, R>(cwd: string, command: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const snap = yield* before(cwd)
        const result = yield* command
        return [result, Option.match(snap, { onNone: () => Effect.succeed(noChanges), onSome: after })] as const
      })

    const since = (cwd: string) =>
      Effect.map(before(cwd), (snap) =>
        Option.match(snap, { onNone: () => Effect.succeed(Intent.NO_CHANGES), onSome: (taken) => Effect.map(after(taken), present) }))

    return {
      before,
      after,
      around,
      since,
      enabled: Ref.get(state).pipe(Effect.map((s) => s._tag === "On")),
      watching: (cwd) =>
        Effect.gen(function*() {
          const root = yield* findWorkTree(cwd)
          const watch = Option.isNone(root) ? undefined : (yield* SynchronizedRef.get(watches)).get(root.value)?.watch
          return watch === undefined ? Option.none() : Option.some(yield* watch.phase)
        })
    }
  })

/** A tracker for one session (its watchers live in the session's scope), with the {@link Settings} in force. */
export const forSession: Effect.Effect<ChangeTracker, never, Scope.Scope> = Effect.flatMap(Settings, make)

export { budgetFromEnv, DEFAULT_BUDGET_MS, enabledFromEnv, Settings, watchFromEnv } from "./ChangeSettings.js"
