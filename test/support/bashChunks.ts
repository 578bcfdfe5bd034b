/**
 * Runs a real bash script and records its output exactly as a harness would receive it: the
 * chunks as the pipes delivered them (stdout and stderr merged in arrival order, decoded as UTF-8
 * with invalid bytes as U+FFFD) and how the process ended.
 */
import { spawn } from "node:child_process"
import * as ExitStatus from "../../src/Terminal/ExitStatus.js"

export interface BashRun {
  readonly chunks: ReadonlyArray<string>
  readonly output: string
  readonly exit: ExitStatus.ExitStatus
}

export const runBashChunks = (script: string): Promise<BashRun> =>
  new Promise((resolve, reject) => {
    const child = spawn("bash", ["--noprofile", "--norc", "-c", script], { stdio: ["ignore", "pipe", "pipe"] })
    const chunks: Array<string> = []
    for (const stream of [child.stdout, child.stderr]) {
      stream.setEncoding("utf8")
      stream.on("data", (chunk: string) => chunks.push(chunk))
    }
    child.on("error", reject)
    child.on("close", (code, signal) =>
      resolve({
        chunks,
        output: chunks.join(""),
        exit: signal !== null ? ExitStatus.signaled(signal) : ExitStatus.exited(code ?? 0)
      }))
  })
