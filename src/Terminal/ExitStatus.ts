/**
 * How a command ended, exactly as the OS reported it.
 *
 * Node reports either an exit `code` or a terminating `signal`, never both; the two cases stay
 * distinct here so the terminal card can show `exit_code` or `signal` without guessing.
 */
import * as Schema from "effect/Schema"

/** A POSIX exit code: an integer 0–255. */
export const ExitCode = Schema.Int.pipe(Schema.between(0, 255))
export type ExitCode = typeof ExitCode.Type

/** A signal name as Node spells it: `SIGTERM`, `SIGKILL`, … */
export const SignalName = Schema.String.pipe(
  Schema.pattern(/^SIG[A-Z0-9]+$/),
  Schema.annotations({ identifier: "SignalName", description: "an upper-case signal name such as SIGTERM" })
)

/** The process exited on its own with this code. */
export class Exited extends Schema.TaggedClass<Exited>()("Exited", { code: ExitCode }) {}

/** The process was terminated by this signal. */
export class Signaled extends Schema.TaggedClass<Signaled>()("Signaled", { signal: SignalName }) {}

export const ExitStatus = Schema.Union(Exited, Signaled)
export type ExitStatus = typeof ExitStatus.Type

export const exited = (code: number): ExitStatus => Exited.make({ code })
export const signaled = (signal: string): ExitStatus => Signaled.make({ signal })

/** A command succeeded iff it exited with code 0. */
export const isSuccess = (status: ExitStatus): boolean => status._tag === "Exited" && status.code === 0
