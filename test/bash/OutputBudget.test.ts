import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { AnsiStripper, stripAnsi } from "../../src/Terminal/Ansi.js"
import { ModelText, modelText } from "../../src/Bash/ModelText.js"
import { OutputBudget } from "../../src/Bash/OutputBudget.js"

const lines = (n: number, width = 9) =>
  Array.from({ length: n }, (_, i) => `${String(i).padStart(width - 1, "0")}\n`).join("")

describe("model text", () => {
  it("keeps everything that fits", () => {
    const raw = lines(100)
    expect(modelText(raw, 30_000)).toEqual({ text: raw, omittedChars: 0 })
  })

  it("keeps a head of one third and a tail of two thirds, cut at line boundaries", () => {
    // 10000 lines of 10 chars = 100000 chars, budget 3000.
    const raw = lines(10_000, 10)
    const { omittedChars, text } = modelText(raw, 3000)
    const [head, tail] = text.split(/\[… \d+ chars omitted …\]\n/)
    expect(head!.length).toBeLessThanOrEqual(1000)
    expect(head!.length).toBeGreaterThan(900)
    expect(tail!.length).toBeLessThanOrEqual(2000)
    expect(tail!.length).toBeGreaterThan(1800)
    expect(text.length).toBeLessThanOrEqual(3000)
    // Whole lines only: the head is a prefix of the input, the tail a suffix, both ending in a newline.
    expect(raw.startsWith(head!)).toBe(true)
    expect(raw.endsWith(tail!)).toBe(true)
    expect(head!.endsWith("\n") && tail!.startsWith("0")).toBe(true)
    expect(tail!.split("\n").every((l) => l === "" || l.length === 9)).toBe(true)
    expect(omittedChars).toBe(raw.length - head!.length - tail!.length)
    expect(text).toContain(`[… ${omittedChars} chars omitted …]`)
  })

  it("cuts one endless line mid-line rather than dropping it all", () => {
    const raw = "x".repeat(200_000)
    const { omittedChars, text } = modelText(raw, 3000)
    expect(omittedChars).toBeGreaterThan(190_000)
    expect(text.startsWith("x".repeat(1000))).toBe(true)
    expect(text.length).toBeLessThanOrEqual(3000)
  })

  it("strips ANSI escapes and other control characters", () => {
    const raw = "\x1b[1;31mred\x1b[0m \x1b]8;;https://x.y\x07link\x1b]8;;\x07 bell\x07\n\x1b(Bok\tTab\n"
    expect(modelText(raw, 30_000).text).toBe("red link bell\nok\tTab\n")
  })

  it("strips an escape sequence split across chunks", () => {
    const m = new ModelText(30_000)
    m.push("a\x1b[3")
    m.push("1mb\x1b")
    m.push("[0mc\n")
    expect(m.finish().text).toBe("abc\n")
    const s = new AnsiStripper()
    expect(s.push("x\x1b]0;title") + s.push(" more\x07y")).toBe("xy")
  })

  it("removes every escape the card's Markdown fallback removes (one grammar): DECSC/DECRC, keypad modes, DEC line modes", () => {
    const raw = "a\x1b7b\x1b8c\x1b=d\x1b>e\x1b#8f\x1b(Bg\n"
    expect(modelText(raw, 1000).text).toBe("abcdefg\n")
    expect(modelText(raw, 1000).text).toBe(stripAnsi(raw))
    // A two-byte sequence split after its ESC is still removed.
    const m = new ModelText(1000)
    m.push("x\x1b")
    m.push("7y\n")
    expect(m.finish().text).toBe("xy\n")
  })

  it.prop(
    "stripping in two chunks equals stripping the whole text",
    [
      FastCheck.array(FastCheck.constantFrom("\x1b", "\x9b", "[", "]", "(", "#", "7", "3", "1", ";", "m", "B", "\x07", "\\", "\n", "a"), { maxLength: 40 }),
      FastCheck.nat()
    ],
    ([parts, cut]) => {
      const whole = parts.join("")
      const at = whole.length === 0 ? 0 : cut % (whole.length + 1)
      const s = new AnsiStripper()
      expect(s.push(whole.slice(0, at)) + s.push(whole.slice(at)) + s.flush()).toBe(stripAnsi(whole))
    }
 ,
    { fastCheck: { numRuns: 3000 } }
  )

  it.prop(
    "a truncated stream gives the same text in any chunking (what is skipped unseen is exactly what would be dropped)",
    [
      FastCheck.array(
        FastCheck.constantFrom("abc", "defghij\n", "\n", "x".repeat(50), "y".repeat(130) + "\n", "\r", "\x1b[31m", "z\n"),
        { maxLength: 60 }
      ),
      FastCheck.array(FastCheck.nat(), { maxLength: 8 })
    ],
    ([parts, cuts]) => {
      const whole = parts.join("")
      const at = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((a, b) => a - b)
      const chunked = new ModelText(300)
      let from = 0
      for (const c of [...at, whole.length]) {
        chunked.push(whole.slice(from, c))
        from = c
      }
      expect(chunked.finish()).toEqual(modelText(whole, 300))
    },
    { fastCheck: { numRuns: 2000 } }
  )

  it("once truncating, control characters are removed from what is kept, not scanned for in what is dropped", () => {
    const m = new ModelText(300)
    m.push("head\n" + "x\n".repeat(500))
    m.push("bell\x07\n".repeat(100))
    const { text } = m.finish()
    expect(text).not.toContain("\x07")
    expect(text.endsWith("bell\n")).toBe(true)
  })

  it("resolves carriage-return rewrites the way a terminal shows them", () => {
    expect(modelText("10%\r50%\r100%\n", 1000).text).toBe("100%\n")
    expect(modelText("abcdef\rXY\n", 1000).text).toBe("XYcdef\n")
    expect(modelText("dos line\r\nnext\r\n", 1000).text).toBe("dos line\nnext\n")
    // Split across chunks: the cursor position carries over.
    const m = new ModelText(1000)
    m.push("progress 1")
    m.push("\rprogress 2\r")
    m.push("progress 3\ndone")
    expect(m.finish().text).toBe("progress 3\ndone")
  })

  it("take() returns the window since the previous take", () => {
    const m = new ModelText(1000)
    m.push("one\n")
    expect(m.take().text).toBe("one\n")
    m.push("two\nthr")
    expect(m.take().text).toBe("two\nthr")
    expect(m.take().text).toBe("")
  })
})

describe("full output file", () => {
  const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "dsh-budget-"))

  it("is written (mode 0600, exact bytes) only when the model text is truncated", () => {
    const dir = tmp()
    const small = new OutputBudget({ maxChars: 1000, fullOutputMaxBytes: 1 << 20, tempDir: dir })
    small.write(Buffer.from("hello\n"))
    expect(small.finish()).toEqual({ output: "hello\n" })
    expect(fs.readdirSync(dir)).toEqual([])

    const big = new OutputBudget({ maxChars: 1000, fullOutputMaxBytes: 1 << 20, tempDir: dir })
    const raw = `\x1b[32m${lines(1000)}`
    big.write(Buffer.from(raw))
    const result = big.finish()
    expect(result.truncated?.savedTo).toBeDefined()
    const file = result.truncated!.savedTo!
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    expect(fs.readFileSync(file, "utf8")).toBe(raw)
  })

  it("is capped", () => {
    const dir = tmp()
    const b = new OutputBudget({ maxChars: 100, fullOutputMaxBytes: 5000, tempDir: dir })
    // More than the in-memory spill threshold, so the file is opened while streaming.
    const chunk = lines(10_000)
    for (let i = 0; i < 20; i++) b.write(Buffer.from(chunk))
    const { truncated } = b.finish()
    const content = fs.readFileSync(truncated!.savedTo!, "utf8")
    expect(content.startsWith(chunk.slice(0, 5000))).toBe(true)
    expect(content).toContain("[full output capped at 5000 bytes]")
    expect(content.length).toBeLessThan(5100)
  })

  it("abort removes a file opened while streaming, and leaves one already handed over as the result's", () => {
    const dir = tmp()
    const chunk = lines(10_000)
    const aborted = new OutputBudget({ maxChars: 100, fullOutputMaxBytes: 1 << 24, tempDir: dir })
    for (let i = 0; i < 20; i++) aborted.write(Buffer.from(chunk))
    expect(fs.readdirSync(dir).length).toBe(1)
    aborted.abort()
    expect(fs.readdirSync(dir)).toEqual([])

    const kept = new OutputBudget({ maxChars: 100, fullOutputMaxBytes: 1 << 24, tempDir: dir })
    for (let i = 0; i < 20; i++) kept.write(Buffer.from(chunk))
    const savedTo = kept.finish().truncated!.savedTo!
    kept.abort()
    expect(fs.readdirSync(dir)).toEqual([path.basename(savedTo)])
  })
})
