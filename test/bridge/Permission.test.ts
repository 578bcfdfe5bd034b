/** What `session/request_permission` shows of a call: its text or diffs and locations, never a terminal block. */
import { describe, expect, it } from "@effect/vitest"
import * as Permission from "../../src/Bridge/Permission.js"
import * as Intent from "../../src/Presentation/Intent.js"
import { validateAcp } from "../support/acpSchema.js"

describe("Permission.requestParams (v1)", () => {
  it("a diff call asks with its diffs and locations; a terminal call with its text only", () => {
    const diff = Permission.requestParams("s", "w1", Intent.DiffCall.make({
      title: "Write a.txt",
      diffs: [{ path: "/p/a.txt", oldText: "a\n", newText: "b\n" }],
      locations: [{ path: "/p/a.txt" }],
      input: { path: "a.txt" }
    }))
    expect(validateAcp("RequestPermissionRequest", diff)).toEqual([])
    expect(diff.toolCall).toMatchObject({
      kind: "edit",
      content: [{ type: "diff", path: "/p/a.txt", oldText: "a\n", newText: "b\n" }],
      locations: [{ path: "/p/a.txt" }]
    })
    const terminal = Permission.requestParams("s", "t1", Intent.TerminalCall.make({ title: "rm -rf build", cwd: "/p", content: [Intent.text("clean")] }))
    expect(validateAcp("RequestPermissionRequest", terminal)).toEqual([])
    expect(terminal.toolCall.content).toEqual([{ type: "content", content: { type: "text", text: "clean" } }])
    expect(JSON.stringify(terminal)).not.toContain("terminal")
  })
})
