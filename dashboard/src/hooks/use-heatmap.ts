import type { HeatmapResponse } from '../lib/heatmap.js'
import { useApi } from './use-api.js'
import type { ApiState } from './use-api.js'

/** Which series, phase and range a heatmap covers. The collector picks the step (about 60 columns). */
export interface HeatmapQuery {
  readonly service: string
  readonly model?: string
  /** One value of a label the heatmap is split by (`{ replica: 'r0' }`); absent: the whole service. */
  readonly label?: { readonly name: 'replica' | 'node' | 'version'; readonly value: string }
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
    {
      service: q.service,
      model: q.model,
      ...(q.label ? { [q.label.name]: q.label.value } : {}),
      phase: q.phase,
      from: q.from,
      to: 'now',
    },
    refreshMs,
  )
}
