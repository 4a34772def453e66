import type { ControllersResponse, DecisionsResponse } from '../lib/controller.js'
import { useApi } from './use-api.js'
import type { ApiState } from './use-api.js'

/**
 * Every controlled target with its mode, setpoints, conditions and last decision (`GET /api/v1/controllers`),
 * refreshed every `refreshMs` and at once when `reloadKey` changes.
 *
 * @example const { response, status } = useControllers(5_000)
 */
export function useControllers(refreshMs?: number, reloadKey?: number): ApiState<ControllersResponse> {
  return useApi<ControllersResponse>('controllers', {}, refreshMs, reloadKey)
}

/**
 * The decisions of one target over a range (`GET /api/v1/decisions`), oldest first.
 *
 * @example const { response } = useDecisions('chat', '-1h', 10_000)
 */
export function useDecisions(
  target: string,
  from: string,
  refreshMs?: number,
  reloadKey?: number,
): ApiState<DecisionsResponse> {
  return useApi<DecisionsResponse>('decisions', { target, from, to: 'now' }, refreshMs, reloadKey)
}
