/**
 * Shapes of the collector's GPU API (`GET /api/v1/gpus`, `/gpus/timeseries`, `/gpus/events`), as the dashboard
 * reads them. They mirror the TypeBox response schemas in collector/routes/gpus.ts.
 *
 * @example
 * ```ts
 * const inv = await apiGet<GpusResponse>('gpus', {}, token)
 * inv.gpus[0].fields.gpuUtilPct?.last // 93
 * ```
 */

/** min, mean, max and last of one counter over one report interval. */
export interface GpuStat {
  readonly min: number
  readonly mean: number
  readonly max: number
  readonly last: number
}

/** A MIG instance of a physical GPU. */
export interface GpuMig {
  readonly gpuInstanceId: number
  readonly computeInstanceId: number | null
  readonly uuid: string | null
  readonly profile: string | null
}

/** Who a GPU row is. `uuid` is the physical GPU's, also for a MIG instance. */
export interface GpuIdentity {
  readonly node: string
  readonly uuid: string
  readonly index: number
  readonly name: string | null
  readonly pciBusId: string | null
  readonly source: string
  readonly mig: GpuMig | null
}

export interface GpuEvent extends GpuIdentity {
  readonly time: string
  readonly kind: string
  readonly xid: number | null
  readonly data: number | null
  readonly message: string | null
}

export interface GpuReplicaRef {
  readonly service: string
  readonly model: string
  readonly version: string
  readonly replica: string
}

export interface GpuProcess {
  readonly pid: number
  readonly gpuInstanceId: number | null
  readonly usedMemoryBytes: GpuStat | null
  readonly smUtilPct: GpuStat | null
  readonly memUtilPct: GpuStat | null
  readonly replica: GpuReplicaRef | null
  readonly podUid: string | null
  readonly containerId: string | null
}

export interface GpuInfo extends GpuIdentity {
  readonly firstSeen: string
  readonly lastSeen: string
  readonly lastReport: string
  readonly samples: number
  readonly fields: Readonly<Record<string, GpuStat | undefined>>
  readonly clockEventReasonsSeen: readonly string[]
  readonly unsupported: readonly string[]
  readonly events: readonly GpuEvent[]
  readonly processes: readonly GpuProcess[]
}

/** A replica GPU processes were attributed to, with its GPU use and its latency over the last 5 minutes. */
export interface GpuReplicaUse extends GpuReplicaRef {
  readonly node: string
  readonly gpus: ReadonlyArray<{ uuid: string; index: number; mig: { gpuInstanceId: number } | null }>
  readonly pids: readonly number[]
  readonly usedMemoryBytes: number | null
  readonly smUtilPct: number | null
  readonly latency: {
    readonly window: string
    readonly count: number
    readonly p50Ms: number | null
    readonly p99Ms: number | null
  }
}

/** `GET /api/v1/gpus`. */
export interface GpusResponse {
  readonly gpus: readonly GpuInfo[]
  readonly replicas: readonly GpuReplicaUse[]
}

export interface GpuSeriesPoint {
  readonly t: string
  readonly min: number
  readonly mean: number
  readonly max: number
  readonly last: number
}

/** `GET /api/v1/gpus/timeseries`. */
export interface GpuTimeseriesResponse {
  readonly from: string
  readonly to: string
  readonly field: string
  readonly stepMs: number
  readonly gpus: ReadonlyArray<GpuIdentity & { readonly points: readonly GpuSeriesPoint[] }>
}
