import { useEffect, useState } from 'react'

/**
 * The current time in epoch ms, updated every `everyMs` (for "last seen 5 s ago" text).
 *
 * @example const nowMs = useNow(5_000)
 */
export function useNow(everyMs: number): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), everyMs)
    return () => window.clearInterval(timer)
  }, [everyMs])
  return now
}
