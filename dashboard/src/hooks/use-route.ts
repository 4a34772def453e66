import { useCallback, useEffect, useState } from 'react'
import { formatRoute, parseRoute } from '../lib/route.js'
import type { Route } from '../lib/route.js'

/**
 * The current hash route, and a function to go to another one (which pushes a history entry).
 *
 * @example const [route, navigate] = useRoute()
 */
export function useRoute(): [Route, (to: Route) => void] {
  const [hash, setHash] = useState(() => window.location.hash)
  useEffect(() => {
    const onChange = () => setHash(window.location.hash)
    window.addEventListener('hashchange', onChange)
    return () => window.removeEventListener('hashchange', onChange)
  }, [])
  const navigate = useCallback((to: Route) => {
    window.location.hash = formatRoute(to)
  }, [])
  return [parseRoute(hash), navigate]
}
