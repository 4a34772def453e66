import type { RequestsResponse, SignalSeriesResponse } from '../lib/signals.js'
import type { SplitLabel } from '../lib/route.js'
import { useApi, useApiList } from './use-api.js'
import type { ApiState } from './use-api.js'

/** Which series and range a signal or request query covers. */
export interface SeriesQuery {
  readonly service: string
  readonly model?: string
  readonly version?: string
  readonly from: string
}

/**
 * Live saturation signals and imported histograms per series over a range (`GET /api/v1/signals`).
 *
 * @example const { response } = useSignals({ service: 'chat', from: '-1h' }, 10_000)
 */
export function useSignals(q: SeriesQuery, refreshMs?: number): ApiState<SignalSeriesResponse> {
  return useApi<SignalSeriesResponse>(
    'signals',
    { service: q.service, model: q.model, version: q.version, from: q.from, to: 'now' },
    refreshMs,
  )
}

/**
 * Request outcomes per bucket with error and shed ratios (`GET /api/v1/requests`).
 *
 * @example const { response } = useRequests({ service: 'chat', from: '-1h' }, 10_000)
 */
export function useRequests(q: SeriesQuery, refreshMs?: number): ApiState<RequestsResponse> {
  return useApi<RequestsResponse>('requests', requestsParams(q), refreshMs)
}

/**
 * {@link useRequests} once per value of a label (`?node=a`, `?node=b`, …), in the order of `values`.
 *
 * @example const states = useRequestsSplit({ service: 'chat', from: '-1h' }, 'node', ['a', 'b'], 10_000)
 */
export function useRequestsSplit(
  q: SeriesQuery,
  label: SplitLabel,
  values: readonly string[],
  refreshMs?: number,
): ReadonlyArray<ApiState<RequestsResponse>> {
  const params = requestsParams(q)
  return useApiList<RequestsResponse>(
    'requests',
    values.map((v) => ({ ...params, [label]: v })),
    refreshMs,
  )
}

function requestsParams(q: SeriesQuery): Record<string, string | undefined> {
  return { service: q.service, model: q.model, version: q.version, from: q.from, to: 'now' }
}
