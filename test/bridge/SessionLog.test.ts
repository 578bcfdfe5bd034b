/**
 * The session log's format: every record round-trips through its Schema, a torn last line is
 * skipped, a foreign or corrupt file is refused, and compaction keeps the newest turns within the
 * bound behind a marker while the harness's state survives whole.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import { compact } from "../../src/Bridge/SessionCompaction.js"
import * as SessionLog from "../../src/Bridge/SessionLog.js"
import * as Intent from "../../src/Presentation/Intent.js"
import { exited } from "../../src/Terminal/ExitStatus.js"

const header: SessionLog.Header = { magic: SessionLog.MAGIC, v: 1, t: "header", id: "dsh-x", cwd: "/p", harness: "shell", createdAt: "2026-01-01T00:00:00.000Z" }
const line = (record: SessionLog.Record) => Either.getOrThrow(SessionLog.recordLine(record))

const turn = (n: number, output: string): Array<SessionLog.Record> => [
  { t: "prompt", at: "2026-01-01T00:00:00.000Z", blocks: [{ _tag: "Text", text: `echo ${n}` }] },
  { t: "event", e: { _tag: "ToolCallStarted", callId: `c${n}`, pending: false, presentation: Intent.TerminalCall.make({ title: `echo ${n}`, cwd: "/p" }) } },
  { t: "event", e: { _tag: "ToolOutput", callId: `c${n}`, data: output } },
  { t: "event", e: { _tag: "ToolCallCompleted", callId: `c${n}`, presentation: Intent.TerminalResult.make({ output, exit: exited(0), statusLines: [] }) } },
  { t: "turnEnd", stopReason: "end_turn" },
  { t: "state", cwd: `/p/${n}`, memory: [{ n }] }
]

const parse = (text: string) => SessionLog.parse(text, "test.jsonl")

describe("SessionLog", () => {
  it("round-trips every record and skips a torn last line", () => {
    const records = [{ t: "title", title: "echo 1" } as const, ...turn(1, "one\n")]
    const text = SessionLog.headerLine(header) + records.map(line).join("")
    const whole = Either.getOrThrow(parse(text))
    expect(whole.records).toEqual(records)
    expect(whole.warnings).toEqual([])
    const torn = Either.getOrThrow(parse(`${text}{"t":"eve`))
    expect(torn.records).toEqual(records)
    expect(torn.warnings[0]).toContain("torn")
  })

  it("refuses a foreign file, a corrupt line, a newer version", () => {
    expect(Either.getLeft(parse("#!/bin/sh\necho hi\n")).pipe((e) => e._tag === "Some" && e.value.reason)).toBe("Foreign")
    expect(Either.getLeft(parse("")).pipe((e) => e._tag === "Some" && e.value.reason)).toBe("Foreign")
    const corrupt = parse(SessionLog.headerLine(header) + `{"t":"event","e":{"_tag":"ToolOutput"}}\n`)
    expect(Either.isLeft(corrupt) && corrupt.left.message).toContain("corrupt at line 2")
    const newer = parse(SessionLog.headerLine({ ...header, v: 2 }))
    expect(Either.isLeft(newer) && newer.left.reason).toBe("Newer")
  })

  it("compaction keeps the newest turns within the bound, a marker, the title and the whole state", () => {
    const records: Array<SessionLog.Record> = [{ t: "title", title: "echo 0" }]
    for (let n = 0; n < 20; n++) records.push(...turn(n, "x".repeat(1000)))
    const parsed = Either.getOrThrow(parse(SessionLog.headerLine(header) + records.map(line).join("")))
    const lines = compact(parsed, 8000)
    expect(lines.join("").length).toBeLessThanOrEqual(8000)
    const after = Either.getOrThrow(parse(lines.join("")))
    expect(after.header.title).toBe("echo 0")
    const dropped = after.records.find((r) => r.t === "dropped")
    const prompts = after.records.filter((r) => r.t === "prompt")
    expect(dropped).toEqual({ t: "dropped", turns: 20 - prompts.length })
    expect(prompts.length).toBeGreaterThan(0)
    expect(prompts.at(-1)).toEqual(records.at(-6))
    // One state record, last, holding every memory entry and the last cwd.
    const states = after.records.filter((r) => r.t === "state")
    expect(states).toEqual([{ t: "state", cwd: "/p/19", memory: Array.from({ length: 20 }, (_, n) => ({ n })), reset: true }])
    // Compacting again adds to the marker's count.
    const again = Either.getOrThrow(parse(compact(after, 3000).join("")))
    expect(again.records.find((r) => r.t === "dropped")).toEqual({ t: "dropped", turns: 20 - again.records.filter((r) => r.t === "prompt").length })
  })
})
