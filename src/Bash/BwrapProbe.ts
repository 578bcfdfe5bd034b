/** Whether `bwrap` can contain commands here: one real run of our namespace init. */
import * as cp from "node:child_process"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { bwrapArgs, FULL_VIEW } from "./NamespaceInit.js"

/** Why `bwrap` cannot contain commands here, or `undefined` when it can. */
export type ProbeResult = { readonly _tag: "Works" } | { readonly _tag: "Missing" } | { readonly _tag: "Broken"; readonly reason: string }

/**
 * Runs `true` the way every command will run (same flags, same init), bounded by `timeout`.
 * bwrap can be installed and still fail: no unprivileged user namespaces, a container without
 * CAP_SYS_ADMIN to mount /proc, a seccomp profile that forbids `clone(CLONE_NEWPID)`.
 */
export const probeBwrap = (
  bwrap = "bwrap",
  timeout: Duration.DurationInput = Duration.seconds(2),
  view: ReadonlyArray<string> = FULL_VIEW
): Effect.Effect<ProbeResult> =>
  Effect.async<ProbeResult>((resume) => {
    let stderr = ""
    let child: cp.ChildProcess
    try {
      child = cp.spawn(bwrap, bwrapArgs("/", "true", [], view), { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] })
    } catch (e) {
      resume(Effect.succeed({ _tag: "Broken", reason: e instanceof Error ? e.message : String(e) }))
      return
    }
    let reported = false
    child.stderr!.setEncoding("utf8")
    child.stderr!.on("data", (text: string) => void (stderr += text))
    // Our init reports `true`'s status on fd 4 (then exits, or waits to be killed): that report is success.
    const report = child.stdio[4] as NodeJS.ReadableStream
    report.setEncoding("utf8")
    report.on("data", (text: string) => {
      if (text.startsWith("0")) {
        reported = true
        child.kill("SIGKILL")
        resume(Effect.succeed({ _tag: "Works" }))
      }
    })
    report.on("error", () => {})
    child.on("error", (e: NodeJS.ErrnoException) =>
      resume(Effect.succeed(e.code === "ENOENT" ? { _tag: "Missing" } : { _tag: "Broken", reason: e.message })))
    // `close` (all pipes closed) rather than `exit`: init reports and exits at once, so bwrap's exit
    // can be seen before the report is read.
    child.on("close", (code, signal) => {
      if (reported) return
      resume(Effect.succeed({ _tag: "Broken", reason: stderr.trim() || `bwrap exited with ${signal ?? code}` }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  }).pipe(
    Effect.timeoutTo({
      duration: timeout,
      onSuccess: (r): ProbeResult => r,
      onTimeout: (): ProbeResult => ({ _tag: "Broken", reason: `no answer within ${Duration.format(timeout)}` })
    })
  )

