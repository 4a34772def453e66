import type { TimeseriesResponse } from '../lib/api-types.js'
import { useApi } from './use-api.js'
import type { ApiState } from './use-api.js'

/** Which series, phase and range a time series covers. The collector picks the step (about 60 points). */
export interface TimeseriesQuery {
  readonly service: string
  readonly model?: string
  readonly phase: string
  readonly from: string
  readonly to?: string
  readonly quantiles: readonly string[]
}

/**
 * Quantiles of one phase per time bucket (`GET /api/v1/timeseries`).
 *
 * @example const { response, status } = useTimeseries({ service: 'chat', phase: 'total', from: '-1h', quantiles: ['0.99'] })
 */
export function useTimeseries(q: TimeseriesQuery, refreshMs?: number): ApiState<TimeseriesResponse> {
  return useApi<TimeseriesResponse>(
    'timeseries',
    {
      service: q.service,
      model: q.model,
      phase: q.phase,
      from: q.from,
      to: q.to ?? 'now',
      quantiles: q.quantiles.join(','),
    },
    refreshMs,
  )
}
