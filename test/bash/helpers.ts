/** Shared helpers for the bash executor tests (real bash, real clock). */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import { expect } from "@effect/vitest"
import type { BashError, BashSession, RunEvent, RunOptions } from "../../src/Bash/Bash.js"
import type { BashArgs } from "../../src/Tools/Bash/BashArgs.js"
import { BWRAP_FLAGS, NAMESPACE_FLAGS } from "../../src/Bash/ChildProcess.js"
import * as Sandbox from "../../src/Bash/Sandbox.js"
import * as StatusLines from "../../src/Bash/StatusLines.js"

/** Parses a result text, failing the test with the parser's message when it does not parse. */
export const parseOk = (text: string): StatusLines.ResultParts => {
  const parsed = StatusLines.parse(text)
  if (Either.isLeft(parsed)) throw new Error(`result does not parse: ${parsed.left.message}\n${text}`)
  // The rendered text is canonical: rendering the parts again gives it back.
  expect(StatusLines.render(parsed.right)).toBe(text)
  return parsed.right
}

export interface Ran {
  readonly events: ReadonlyArray<RunEvent>
  /** The raw output chunks joined. */
  readonly output: string
  readonly text: string
  readonly parts: StatusLines.ResultParts
  readonly ms: number
}

/** Runs a foreground command to the end and checks the stream's shape: Output* then one Finished. */
export const run = (session: BashSession, args: BashArgs, options?: RunOptions): Effect.Effect<Ran, BashError> =>
  Effect.gen(function*() {
    const t0 = Date.now()
    const events = Chunk.toArray(yield* Stream.runCollect(session.run(args, options)))
    const ms = Date.now() - t0
    const last = events.at(-1)
    expect(last?._tag).toBe("Finished")
    expect(events.slice(0, -1).every((e) => e._tag === "Output")).toBe(true)
    const text = last!._tag === "Finished" ? last!.result.text : ""
    const output = events.flatMap((e) => e._tag === "Output" ? [e.data] : []).join("")
    return { events, output, text, parts: parseOk(text), ms }
  })

/** The pgid a command announced with `echo PGID=$$` (bash is its group's leader). */
export const pgidIn = (text: string): number => {
  const m = /PGID=(\d+)/.exec(text)
  if (m === null) throw new Error(`no PGID in ${JSON.stringify(text)}`)
  return Number(m[1])
}

/** Live processes in a process group, found by walking /proc (independently of the code under test). */
export const groupMembers = (pgid: number): Array<number> =>
  fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e)).flatMap((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      return Number(pgrp) === pgid && state !== "Z" ? [Number(pid)] : []
    } catch {
      return []
    }
  })

/** Polls until `f` holds (or the deadline passes), for conditions a process reaches on its own. */
export const eventually = <A>(f: () => A | undefined, ms = 5000): Effect.Effect<A> =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (true) {
      const a = f()
      if (a !== undefined) return a
      if (Date.now() > deadline) throw new Error("condition not reached in time")
      yield* Effect.sleep("50 millis")
    }
  })

/**
 * Both containment modes, the bwrap one skipped (with its reason) where bwrap does not work: the
 * executor's behaviour must be the same in both.
 */
export const bwrapProblem: string | undefined = (() => {
  const r = spawnSync("bwrap", [...BWRAP_FLAGS, "--", "true"], { timeout: 5000, encoding: "utf8" })
  if (r.error !== undefined) return `bwrap unavailable: ${r.error.message}`
  return r.status === 0 ? undefined : `bwrap does not work here: ${(r.stderr ?? "").trim() || `status ${r.status}`}`
})()

export const containmentModes: ReadonlyArray<{ readonly mode: "process-group" | "bwrap"; readonly skip: string | undefined }> = [
  { mode: "process-group", skip: undefined },
  { mode: "bwrap", skip: bwrapProblem }
]

let tokenCounter = 0
/** A number unique to this test run, to put in a command's argv (`sleep 100.<token>`) and find its processes by. */
export const token = (): string => `${process.pid}${++tokenCounter}${Math.floor(Math.random() * 1e6)}`

/**
 * Live processes whose command line contains `token` (bash's script or `sleep 100.<token>`), found
 * by walking /proc independently of the code under test — whatever their group or namespace.
 */
export const livingWith = (tok: string): Array<number> =>
  fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid).flatMap((pid) => {
    try {
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, "latin1").includes(tok)) return []
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
      return state === "Z" || state === "X" ? [] : [Number(pid)]
    } catch {
      return []
    }
  })

/**
 * What is still alive of `tok`'s processes once they had up to `ms` to die: a group's SIGKILL is
 * sent before the call (or its scope) ends, but the kernel finishes killing asynchronously, so an
 * immediate look can still see a dying `sleep` on a loaded machine. A process that was never killed
 * (`sleep 100`) outlives the wait and is returned.
 */
export const survivorsOf = (tok: string, ms = 5000): Effect.Effect<Array<number>> =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    for (;;) {
      const living = livingWith(tok)
      if (living.length === 0 || Date.now() > deadline) return living
      yield* Effect.sleep("20 millis")
    }
  })

/** Why the sandbox cannot run here (the tests skip), or undefined. */
export const sandboxProblem: string | undefined = (() => {
  const dir = os.tmpdir()
  const view = Sandbox.view("read-only", { workspace: dir, additionalDirectories: [], toolDir: dir, allowNetwork: false })
  const r = spawnSync("bwrap", [...NAMESPACE_FLAGS, ...view, "--", "true"], { timeout: 5000, encoding: "utf8" })
  if (r.error !== undefined) return `bwrap unavailable: ${r.error.message}`
  return r.status === 0 ? undefined : `bwrap cannot make the sandbox here: ${(r.stderr ?? "").trim() || `status ${r.status}`}`
})()
