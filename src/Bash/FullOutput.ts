/**
 * The exact bytes a command wrote, kept for when its model text turns out truncated (see
 * `OutputBudget`): the model is told where to read them.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { randomHex } from "../Platform/Random.js"

/** Raw bytes before the full-output file is opened; past this they go to the file. */
const SPILL_BYTES = 1 << 20

/**
 * The exact bytes a command wrote, kept for when the model text turns out truncated. Small output
 * stays in memory; past {@link SPILL_BYTES} it streams into a 0600 file, capped at `maxBytes`.
 * A file that turns out unneeded is removed, so a file exists only for a truncated result.
 */
export class FullOutput {
  private held: Array<Uint8Array> = []
  private heldBytes = 0
  private fd: number | undefined
  private filePath: string | undefined
  private written = 0
  private capped = false
  private failed = false
  /** `finish` ran: the file (if kept) belongs to the result now. */
  private done = false

  constructor(private readonly dir: string, private readonly maxBytes: number) {}

  write(bytes: Uint8Array): void {
    if (this.failed) return
    if (this.fd === undefined) {
      this.held.push(bytes)
      this.heldBytes += bytes.length
      if (this.heldBytes > SPILL_BYTES) this.open()
      return
    }
    this.append(bytes)
  }

  /** Keeps the file (returns its path) or removes it. */
  finish(keep: boolean): string | undefined {
    if (this.done) return undefined
    this.done = true
    if (keep && this.fd === undefined && !this.failed) this.open()
    if (this.fd !== undefined) {
      if (keep && this.capped) this.writeAll(Buffer.from(`\n[full output capped at ${this.maxBytes} bytes]\n`))
      try {
        fs.closeSync(this.fd)
      } catch {
        // already closed
      }
      this.fd = undefined
    }
    this.held = []
    if (!keep && this.filePath !== undefined) {
      try {
        fs.unlinkSync(this.filePath)
      } catch {
        // already gone
      }
      return undefined
    }
    return keep && !this.failed ? this.filePath : undefined
  }

  /**
   * For a call that ends without a result (interrupted): closes the file and removes it. After
   * `finish` it does nothing, so a file handed over as the result's saved file stays.
   */
  abort(): void {
    if (this.done) return
    this.finish(false)
  }

  private open(): void {
    try {
      fs.mkdirSync(this.dir, { recursive: true })
      this.filePath = path.join(this.dir, `dsh-acp-output-${Date.now()}-${randomHex(4)}.log`)
      this.fd = fs.openSync(this.filePath, "wx", 0o600)
    } catch {
      this.failed = true
      this.filePath = undefined
      this.held = []
      return
    }
    const held = this.held
    this.held = []
    this.heldBytes = 0
    for (const b of held) this.append(b)
  }

  private append(bytes: Uint8Array): void {
    const room = this.maxBytes - this.written
    if (room <= 0) {
      this.capped = this.capped || bytes.length > 0
      return
    }
    const part = bytes.length > room ? bytes.subarray(0, room) : bytes
    if (part.length < bytes.length) this.capped = true
    this.writeAll(part)
    this.written += part.length
  }

  private writeAll(bytes: Uint8Array): void {
    if (this.fd === undefined) return
    try {
      let off = 0
      while (off < bytes.length) off += fs.writeSync(this.fd, bytes, off, bytes.length - off)
    } catch {
      this.failed = true
    }
  }
}
