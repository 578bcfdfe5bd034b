/**
 * `kill(-pgid, signal)` for groups that are usually gone already. Node reports ESRCH as an
 * exception, and a call ends with one or two of them (the probe before counting `&` jobs, the
 * final SIGKILL to the group or the namespace's init): capturing their stack traces from a deep
 * Effect stack cost ~0.2 ms a call in a burst (CPU profile), an exception without frames ~2 µs.
 */

/** Signals the group (0: only asks whether it exists); false when it is gone (ESRCH). */
export const signalGroup = (pgid: number, signal: NodeJS.Signals | 0): boolean => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    process.kill(-pgid, signal)
    return true
  } catch (error) {
    // EPERM cannot happen for our own children; anything else is reported as "still there".
    return (error as NodeJS.ErrnoException).code !== "ESRCH"
  } finally {
    Error.stackTraceLimit = limit
  }
}
