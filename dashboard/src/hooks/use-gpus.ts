import type { GpuTimeseriesResponse, GpusResponse } from '../lib/gpu-types.js'
import { useApi } from './use-api.js'
import type { ApiState } from './use-api.js'

/**
 * The GPU inventory (`GET /api/v1/gpus`): current state, events of the last hour, processes and their replicas.
 *
 * @example const { response, status } = useGpus(10_000)
 */
export function useGpus(refreshMs?: number): ApiState<GpusResponse> {
  return useApi<GpusResponse>('gpus', {}, refreshMs)
}

/**
 * One GPU field for every GPU over a range (`GET /api/v1/gpus/timeseries`); the collector picks the step
 * (about 60 points).
 *
 * @example const { response } = useGpuTimeseries('gpuUtilPct', '-1h', 10_000)
 */
export function useGpuTimeseries(
  field: string,
  from: string,
  refreshMs?: number,
): ApiState<GpuTimeseriesResponse> {
  return useApi<GpuTimeseriesResponse>('gpus/timeseries', { field, from, to: 'now' }, refreshMs)
}
