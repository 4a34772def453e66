import { gpuKey } from './gpu-transforms.js'
import type { GpuTimeseriesResponse } from './gpu-types.js'

/** The telemetry charts of a GPU beside utilization and memory: each one or more fields of one unit. */
export const TELEMETRY_CHARTS = [
  { chart: 'gpu-power', title: 'Power', unit: 'W', fields: [{ field: 'powerW', name: 'power' }] },
  {
    chart: 'gpu-temperature',
    title: 'Temperature',
    unit: '°C',
    fields: [{ field: 'temperatureC', name: 'GPU' }],
  },
  {
    chart: 'gpu-clocks',
    title: 'Clocks',
    unit: 'MHz',
    fields: [
      { field: 'smClockMhz', name: 'SM' },
      { field: 'memClockMhz', name: 'memory' },
    ],
  },
  {
    chart: 'gpu-tensor',
    title: 'Tensor activity',
    unit: '%',
    fields: [{ field: 'tensorActivePct', name: 'tensor active' }],
  },
] as const

/** Every GPU field the telemetry charts read. */
export const TELEMETRY_FIELDS: readonly string[] = TELEMETRY_CHARTS.flatMap((c) =>
  c.fields.map((f) => f.field),
)

/** One time bucket of a GPU's telemetry: the mean of each field in that bucket, `null` where it has none. */
export type TelemetryRow = { readonly tMs: number } & Readonly<Record<string, number | null>>

/**
 * Joins one GPU's series of several fields (one `/gpus/timeseries` answer per field) on time, oldest first,
 * with each bucket's mean; a field without a point in a bucket is `null` there (a gap, not a zero).
 *
 * @example telemetryRows({ powerW: res }, key) // [{ tMs, powerW: 412.5 }, …]
 */
export function telemetryRows(
  byField: Readonly<Record<string, Pick<GpuTimeseriesResponse, 'gpus'> | null>>,
  key: string,
): TelemetryRow[] {
  const fields = Object.keys(byField)
  const rows = new Map<number, Record<string, number | null>>()
  for (const field of fields)
    for (const p of byField[field]?.gpus.find((g) => gpuKey(g) === key)?.points ?? []) {
      const t = Date.parse(p.t)
      let r = rows.get(t)
      if (!r) rows.set(t, (r = Object.fromEntries(fields.map((f) => [f, null]))))
      r[field] = p.mean
    }
  return [...rows.entries()].sort((a, b) => a[0] - b[0]).map(([tMs, r]) => ({ ...r, tMs }) as TelemetryRow)
}

/**
 * The telemetry charts a GPU has data for in `rows`, each with only the fields that have a point: a GPU that
 * never reports tensor activity (NVML without DCGM) gets no tensor chart.
 *
 * @example chartsWithData(rows).map((c) => c.chart) // ['gpu-power', 'gpu-temperature', 'gpu-clocks']
 */
export function chartsWithData(rows: readonly TelemetryRow[]) {
  const has = (field: string) => rows.some((r) => typeof r[field] === 'number')
  return TELEMETRY_CHARTS.map((c) => ({ ...c, fields: c.fields.filter((f) => has(f.field)) })).filter(
    (c) => c.fields.length > 0,
  )
}
