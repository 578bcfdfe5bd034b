/**
 * Scans of `/proc`: what is still alive of a command's process group or pid namespace (to count
 * `&` jobs left behind, and to know when a killed namespace is empty). Each scan reads a file per
 * process on the machine, so callers ask only when the cheap answer (the group is gone) is not enough.
 */
import * as fs from "node:fs"
import { signalGroup } from "./GroupSignal.js"

/**
 * How many live (non-zombie) processes are in the group. Scans `/proc` on Linux; elsewhere answers
 * 1 when the group still exists (an honest lower bound) and 0 otherwise.
 */
export const countGroup = (pgid: number): number => {
  // Almost always the group is already gone: answer that without scanning /proc, which reads one
  // file per process on the machine (measured: 2-3 ms of every call with ~80 processes, more on a
  // desktop) and blocks the event loop meanwhile.
  if (!signalGroup(pgid, 0)) return 0
  let entries: Array<string>
  try {
    entries = fs.readdirSync("/proc")
  } catch {
    return signalGroup(pgid, 0) ? 1 : 0
  }
  let n = 0
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue
    let stat: string
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, "latin1")
    } catch {
      continue
    }
    // Fields after the command name (which may contain spaces and parentheses): state ppid pgrp …
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") n++
  }
  return n
}

/** Live processes in the pid namespace `nsInode` (Linux only), except `exceptPid`. */
export const countNamespace = (nsInode: number, exceptPid: number): number => {
  const target = `pid:[${nsInode}]`
  let n = 0
  let entries: Array<string>
  try {
    entries = fs.readdirSync("/proc")
  } catch {
    return 0
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57 || Number(entry) === exceptPid) continue
    try {
      if (fs.readlinkSync(`/proc/${entry}/ns/pid`) !== target) continue
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "latin1")
      const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
      if (state !== "Z" && state !== "X") n++
    } catch {
      // gone while we looked
    }
  }
  return n
}

