import type { ServicesResponse } from '../lib/api-types.js'
import { useApi } from './use-api.js'
import type { ApiState } from './use-api.js'

/**
 * Every series that reports (`GET /api/v1/services`), refreshed every `refreshMs`.
 *
 * @example const { response, status } = useServices(10_000)
 */
export function useServices(refreshMs?: number): ApiState<ServicesResponse> {
  return useApi<ServicesResponse>('services', {}, refreshMs)
}
