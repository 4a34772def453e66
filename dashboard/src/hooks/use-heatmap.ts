import type { HeatmapResponse } from '../lib/heatmap.js'
import { useApi } from './use-api.js'
import type { ApiState } from './use-api.js'

/** Which series, phase and range a heatmap covers. The collector picks the step (about 60 columns). */
export interface HeatmapQuery {
  readonly service: string
  readonly model?: string
  readonly phase: string
  readonly from: string
}

/**
 * Sample counts per latency band and time step (`GET /api/v1/heatmap`).
 *
 * @example const { response } = useHeatmap({ service: 'chat', phase: 'total', from: '-1h' }, 10_000)
 */
export function useHeatmap(q: HeatmapQuery, refreshMs?: number): ApiState<HeatmapResponse> {
  return useApi<HeatmapResponse>(
    'heatmap',
    { service: q.service, model: q.model, phase: q.phase, from: q.from, to: 'now' },
    refreshMs,
  )
}
