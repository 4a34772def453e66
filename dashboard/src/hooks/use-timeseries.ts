import type { TimeseriesResponse } from '../lib/api-types.js'
import type { SplitLabel } from '../lib/route.js'
import { useApi, useApiList } from './use-api.js'
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
  return useApi<TimeseriesResponse>('timeseries', timeseriesParams(q), refreshMs)
}

/**
 * {@link useTimeseries} once per value of a label (`?replica=chat-0`, `?replica=chat-1`, …), in the order of `values`.
 *
 * @example const states = useTimeseriesSplit(q, 'replica', ['chat-0', 'chat-1'], 10_000)
 */
export function useTimeseriesSplit(
  q: TimeseriesQuery,
  label: SplitLabel,
  values: readonly string[],
  refreshMs?: number,
): ReadonlyArray<ApiState<TimeseriesResponse>> {
  const params = timeseriesParams(q)
  return useApiList<TimeseriesResponse>(
    'timeseries',
    values.map((v) => ({ ...params, [label]: v })),
    refreshMs,
  )
}

function timeseriesParams(q: TimeseriesQuery): Record<string, string | undefined> {
  return {
    service: q.service,
    model: q.model,
    phase: q.phase,
    from: q.from,
    to: q.to ?? 'now',
    quantiles: q.quantiles.join(','),
  }
}
