import type { BreakdownResponse } from '../lib/api-types.js'
import { useApi } from './use-api.js'
import type { ApiState } from './use-api.js'

/** Which series and range a breakdown covers. Empty strings are left out of the query. */
export interface BreakdownQuery {
  readonly service: string
  readonly model?: string
  /** API time: relative (`-1h`), `now` or ISO. */
  readonly from: string
  readonly to?: string
  readonly quantiles: readonly string[]
}

/**
 * Per-phase percentiles, shares of total time and request counts (`GET /api/v1/breakdown`).
 *
 * @example const { response } = useBreakdown({ service: 'chat', from: '-5m', quantiles: ['0.5', '0.99'] }, 10_000)
 */
export function useBreakdown(q: BreakdownQuery, refreshMs?: number): ApiState<BreakdownResponse> {
  return useApi<BreakdownResponse>(
    'breakdown',
    {
      service: q.service,
      model: q.model,
      from: q.from,
      to: q.to ?? 'now',
      quantiles: q.quantiles.join(','),
    },
    refreshMs,
  )
}
