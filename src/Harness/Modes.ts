/**
 * Session modes over the executor's sandbox profiles. A mode is a profile (what a command may
 * touch) and, for the model harness, whether each model command asks the user first:
 *
 * | harness | mode        | profile   | asks |
 * |---------|-------------|-----------|------|
 * | model   | `ask`       | full      | yes (unless `--approve-all` or "always allow") |
 * | model   | `auto`      | workspace | no   |
 * | model   | `read-only` | read-only | no   |
 * | shell   | `full`      | full      | —    |
 * | shell   | `workspace` | workspace | —    |
 * | shell   | `read-only` | read-only | —    |
 *
 * Where the sandbox does not work, only the full mode is offered and `note` says why. The session
 * starts in the mode of the executor's profile (`--sandbox`, `DSH_ACP_SANDBOX`).
 */
import * as Effect from "effect/Effect"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { SandboxControl } from "../Bash/Bash.js"
import type { SandboxProfile } from "../Bash/Sandbox.js"
import { type SessionMode, type SessionModes, UnknownMode } from "./Harness.js"

export interface ModeSpec extends SessionMode {
  readonly profile: SandboxProfile
  /** Model commands ask the user before they run. */
  readonly asks: boolean
}

const WORKSPACE = "Commands may write only the project and its additional directories (and a private /tmp); " +
  "no network unless the agent was started with --allow-network."
const READ_ONLY = "Commands may read everything and write nothing (a private /tmp); no network."

export const shellModes: ReadonlyArray<ModeSpec> = [
  { id: "full", name: "Full access", description: "Commands run with your full access: every file, the network.", profile: "full", asks: false },
  { id: "workspace", name: "Workspace", description: WORKSPACE, profile: "workspace", asks: false },
  { id: "read-only", name: "Read-only", description: READ_ONLY, profile: "read-only", asks: false }
]

export const modelModes = (approveAll: boolean): ReadonlyArray<ModeSpec> => [
  {
    id: "ask",
    name: "Ask",
    description: approveAll
      ? "Commands run with your full access, without asking (--approve-all)."
      : "Commands run with your full access; each one asks for permission first.",
    profile: "full",
    asks: !approveAll
  },
  { id: "auto", name: "Auto", description: `Commands run without asking, sandboxed. ${WORKSPACE}`, profile: "workspace", asks: false },
  { id: "read-only", name: "Read-only", description: `Commands run without asking, sandboxed. ${READ_ONLY}`, profile: "read-only", asks: false }
]

export interface Modes extends SessionModes {
  /** The current mode's rule for model commands. */
  readonly asks: Effect.Effect<boolean>
}

/** The modes of one session over its executor session (which holds the profile). */
export const make = (shell: SandboxControl, specs: ReadonlyArray<ModeSpec>): Effect.Effect<Modes> =>
  Effect.gen(function*() {
    const support = yield* shell.sandbox
    const offered = support._tag === "Available" ? specs : specs.filter((m) => m.profile === "full")
    const profile = yield* shell.profile
    const current = yield* SubscriptionRef.make(offered.find((m) => m.profile === profile) ?? offered[0]!)
    const set = (modeId: string): Effect.Effect<void, UnknownMode> =>
      // One step: the profile and the mode change together, whatever else sets the mode meanwhile.
      SubscriptionRef.updateEffect(current, () => {
        const mode = offered.find((m) => m.id === modeId)
        if (mode === undefined) {
          return Effect.fail(
            new UnknownMode({
              modeId,
              message: `unknown mode ${JSON.stringify(modeId)}; this session offers ${offered.map((m) => m.id).join(", ")}`
            })
          )
        }
        return shell.setProfile(mode.profile).pipe(
          Effect.mapError((error) => new UnknownMode({ modeId, message: error.message })),
          Effect.as(mode)
        )
      })
    return {
      available: offered.map(({ description, id, name }) => ({ id, name, description })),
      current: Effect.map(SubscriptionRef.get(current), (m) => m.id),
      set,
      asks: Effect.map(SubscriptionRef.get(current), (m) => m.asks),
      ...(support._tag === "Unavailable" ? { note: `Sandboxed modes are not offered: ${support.reason}.` } : {})
    }
  })
