/** A task run now and then every period, never twice at once; what polling sources (DCGM, scrapes) share. */
export interface Periodic {
  /** Runs the task now and then every period (a second call does nothing). */
  start(): void
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>
}

/**
 * Runs `task` on start and every `everyMs` (an unref'd timer: it keeps no process alive); a tick while the previous
 * run is still going is skipped.
 *
 * @example
 * ```ts
 * const poll = periodic(() => scrapeOnce(), 5000)
 * poll.start(); … await poll.stop()
 * ```
 */
export function periodic(task: () => Promise<void>, everyMs: number): Periodic {
  let timer: NodeJS.Timeout | undefined
  let inFlight: Promise<void> | undefined
  const tick = () => {
    if (inFlight !== undefined) return
    inFlight = task().finally(() => {
      inFlight = undefined
    })
  }
  return {
    start() {
      if (timer !== undefined) return
      tick()
      timer = setInterval(tick, everyMs)
      timer.unref()
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await inFlight
    },
  }
}
