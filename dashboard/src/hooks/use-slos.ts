import type { SloDetailResponse, SloListResponse } from '../lib/slo-types.js'
import { useApi } from './use-api.js'
import type { ApiState } from './use-api.js'

/** The path of the SLO list. */
export const SLOS_PATH = 'slos'

/**
 * Every SLO with its latest evaluation (`GET /api/v1/slos`), refreshed every `refreshMs`.
 *
 * @example const { response, error, status } = useSlos(10_000)
 */
export function useSlos(refreshMs?: number): ApiState<SloListResponse> {
  return useApi<SloListResponse>(SLOS_PATH, {}, refreshMs)
}

/**
 * One SLO's status, hourly burn-down and definition (`GET /api/v1/slos/{name}`), refreshed every `refreshMs`.
 *
 * @example const { response, error, status } = useSlo('chat-latency', 10_000)
 */
export function useSlo(name: string, refreshMs?: number): ApiState<SloDetailResponse> {
  return useApi<SloDetailResponse>(`slos/${encodeURIComponent(name)}`, {}, refreshMs)
}
