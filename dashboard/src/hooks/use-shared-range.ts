import { useEffect, useState } from 'react'
import { routeRange } from '../lib/route.js'
import type { Route } from '../lib/route.js'
import { DEFAULT_RANGE } from '../lib/time-range.js'

/**
 * The time range shared by all pages: the current route's `range`, or on a page without one (the SLO pages)
 * the last range a page had, so that the navigation's links carry it back.
 *
 * @example const range = useSharedRange(route) // '6h'
 */
export function useSharedRange(route: Route | null): string {
  const current = route ? routeRange(route) : undefined
  const [last, setLast] = useState(current ?? DEFAULT_RANGE)
  useEffect(() => {
    if (current !== undefined) setLast(current)
  }, [current])
  return current ?? last
}
