/**
 * The Node side of the pid-namespace protocol for one command (the shell side is `NamespaceInit`):
 * - bwrap's info fd (3) says init's host pid (the command's group, where signals go) and the
 *   namespace's inode (to scan `/proc` for what is left in it);
 * - init's report fd (4) says the command's `$?`, and ` alone` when nothing else was left, in which
 *   case init exits and takes the namespace with it;
 * - without a report (init killed, or bwrap failed to set up) bwrap's own exit is the status: it
 *   passes on init's death by signal n as 128+n (init is only ever killed by us). Taken once both
 *   bwrap has exited and the report pipe has closed, so a report still in the pipe when bwrap's
 *   exit is seen (init exits right after reporting) comes first.
 * One small state machine: `running` → (`reported` | `reportedAlone` | bwrap's exit) → `ended`.
 */
import type * as cp from "node:child_process"
import * as fs from "node:fs"
import type { ExitStatus } from "../Terminal/ExitStatus.js"
import { namespaceStatus } from "./NamespaceInit.js"

export interface Namespace {
  /** init's host pid: the leader of the command's group. */
  readonly init: number
  /** The pid namespace's inode (`/proc/<pid>/ns/pid`). */
  readonly inode: number
}

export interface WatchOptions {
  /** What a pre-spawned bwrap already wrote on its info fd (see `Prewarm`). */
  readonly info?: string | undefined
  /** The command's own EXIT-trap record of `$?` (see `NamespaceInit.namespaceStatus`). */
  readonly exitFile?: string | undefined
  /** The command's status, once; `statusOf` maps a code or signal of bwrap itself. */
  readonly onStatus: (status: ExitStatus) => void
  readonly statusOf: (code: number | null, signal: NodeJS.Signals | null) => ExitStatus
}

export class NamespaceWatch {
  /** Known once bwrap said it (a pre-spawned one mostly has: a kill then reaches init at once). */
  namespace: Namespace | undefined
  /** It is over (init found itself alone and exits, or bwrap exited): nothing is left in it. */
  ended = false
  /** A signal was sent while it was alive, so its teardown may still be running. */
  killedLive = false
  private reported = false
  private bwrapExit: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined
  private reportClosed = false

  constructor(child: cp.ChildProcess, private readonly options: WatchOptions) {
    const info = child.stdio[3] as NodeJS.ReadableStream
    let infoText = options.info ?? ""
    if (options.info !== undefined) {
      info.removeAllListeners("data")
      this.parseInfo(infoText)
    } else {
      info.setEncoding("utf8")
    }
    info.on("data", (text: string) => this.parseInfo(infoText += text))
    info.on("error", () => {})
    const report = child.stdio[4] as NodeJS.ReadableStream
    let reportText = ""
    report.setEncoding("utf8")
    report.on("data", (text: string) => this.onReport(reportText += text))
    report.on("close", () => {
      this.reportClosed = true
      this.exitWithoutReport()
    })
    report.on("error", () => {})
    child.on("exit", (code, signal) => {
      this.ended = true
      this.bwrapExit = { code, signal }
      this.exitWithoutReport()
    })
  }

  /** Notes a signal sent to the namespace (see {@link killedLive}). */
  signalled(): void {
    if (!this.ended) this.killedLive = true
  }

  private parseInfo(text: string): void {
    try {
      const parsed = JSON.parse(text) as { "child-pid"?: unknown; "pid-namespace"?: unknown }
      if (typeof parsed["child-pid"] === "number" && typeof parsed["pid-namespace"] === "number") {
        this.namespace = { init: parsed["child-pid"], inode: parsed["pid-namespace"] }
      }
    } catch {
      // not complete yet
    }
  }

  private onReport(text: string): void {
    const m = /^(\d+)( alone)?\n/.exec(text)
    if (m === null || this.reported) return
    this.reported = true
    if (m[2] !== undefined) this.ended = true
    let recorded: number | undefined
    if (this.options.exitFile !== undefined) {
      try {
        const text = fs.readFileSync(this.options.exitFile, "utf8").trim()
        if (/^\d+$/.test(text)) recorded = Number(text)
      } catch {
        // no EXIT trap ran: killed, or replaced by `exec`
      }
    }
    this.options.onStatus(namespaceStatus(Number(m[1]), recorded))
  }

  private exitWithoutReport(): void {
    if (this.reported || this.bwrapExit === undefined || !this.reportClosed) return
    this.reported = true
    const { code, signal } = this.bwrapExit
    this.options.onStatus(signal === null && code !== null ? namespaceStatus(code, undefined) : this.options.statusOf(code, signal))
  }
}
