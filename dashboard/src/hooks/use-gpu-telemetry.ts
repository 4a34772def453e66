import type { ApiError } from '../api.js'
import { TELEMETRY_FIELDS, telemetryRows } from '../lib/gpu-telemetry.js'
import type { TelemetryRow } from '../lib/gpu-telemetry.js'
import type { LoadStatus } from './use-api.js'
import { useGpuTimeseries } from './use-gpus.js'

/**
 * Every GPU's power, temperature, SM and memory clocks and tensor activity over a range (one
 * `/gpus/timeseries` request per field), with one combined status and a per-GPU row accessor.
 *
 * @example const t = useGpuTelemetry('-1h', 10_000); t.rows(gpuKey)
 */
export function useGpuTelemetry(
  from: string,
  refreshMs?: number,
): { status: LoadStatus; error: ApiError | null; rows: (key: string) => TelemetryRow[] } {
  // A fixed list, so the hooks run in the same order on every render.
  const states = TELEMETRY_FIELDS.map((field) => [field, useGpuTimeseries(field, from, refreshMs)] as const)
  const status: LoadStatus = states.some(([, s]) => s.status === 'loading')
    ? 'loading'
    : states.some(([, s]) => s.status === 'error')
      ? 'error'
      : 'success'
  const error = states.find(([, s]) => s.error)?.[1].error ?? null
  const byField = Object.fromEntries(states.map(([f, s]) => [f, s.response]))
  return { status, error, rows: (key) => telemetryRows(byField, key) }
}
