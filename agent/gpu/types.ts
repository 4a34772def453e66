import type { GpuField } from '../../collector/index.js'
import type { Source } from '../types.js'

/** The MIG identity of a reading: which GPU instance (and compute instance) of the physical GPU it covers. */
export interface MigIdentity {
  readonly gpuInstanceId: number
  readonly computeInstanceId?: number
  /** The MIG device's own UUID (`MIG-…`), where NVML gave one. */
  readonly uuid?: string
  /** The GPU instance profile (`1g.10gb`), where DCGM exporter gave one. */
  readonly profile?: string
}

/**
 * One reading of one GPU or MIG instance. `uuid` and `index` are always the physical GPU's.
 * A field NVML answered NOT_SUPPORTED is absent from `values`; a field whose NVML symbol is missing is named in
 * `unsupported`.
 *
 * @example
 * ```ts
 * const r: GpuDeviceReading = { uuid: 'GPU-5f…', index: 0, name: 'NVIDIA H100', values: { gpuUtilPct: 93, powerW: 412.5 } }
 * ```
 */
export interface GpuDeviceReading {
  readonly uuid: string
  readonly index: number
  readonly name?: string
  readonly pciBusId?: string
  readonly mig?: MigIdentity
  readonly values: Readonly<Partial<Record<GpuField, number>>>
  readonly unsupported?: readonly string[]
  readonly k8s?: { readonly namespace?: string; readonly pod?: string; readonly container?: string }
}

/** One process seen on a GPU in one reading. */
export interface GpuProcessReading {
  readonly uuid: string
  readonly index: number
  readonly pid: number
  readonly gpuInstanceId?: number
  readonly computeInstanceId?: number
  readonly usedMemoryBytes?: number
  readonly smUtilPct?: number
  readonly memUtilPct?: number
}

/**
 * Something that happened to a GPU: an XID error, a double-bit ECC error, the GPU falling off the bus.
 *
 * @example
 * ```ts
 * const e: GpuEventReading = { timeMs: Date.now(), uuid: 'GPU-5f…', index: 0, kind: 'xid', xid: 79, message: 'GPU has fallen off the bus' }
 * ```
 */
export interface GpuEventReading {
  /** The source that saw it (default `nvml`). */
  readonly source?: 'nvml' | 'dcgm'
  readonly timeMs: number
  readonly uuid: string
  readonly index: number
  /** `xid`, `ecc_double_bit`, `ecc_single_bit`, `pstate`, `clock`, `mig_config_change`, `gpu_lost`, `gpu_recovered`. */
  readonly kind: string
  readonly xid?: number
  readonly data?: number
  readonly gpuInstanceId?: number
  readonly computeInstanceId?: number
  readonly message?: string
}

/** Everything one sampling pass of one source saw. */
export interface GpuReading {
  readonly source: 'nvml' | 'dcgm'
  readonly timeMs: number
  readonly devices: readonly GpuDeviceReading[]
  readonly processes: readonly GpuProcessReading[]
}

/** Where a GPU source delivers its readings and events. Implementations never throw. */
export interface GpuListener {
  reading(r: GpuReading): void
  event(e: GpuEventReading): void
}

/**
 * A GPU source: an agent {@link Source} that also delivers GPU readings to its subscribers.
 *
 * @example
 * ```ts
 * const off = source.subscribe({ reading: (r) => fold.add(r), event: (e) => fold.event(e) })
 * source.start(sink)
 * ```
 */
export interface GpuSource extends Source {
  readonly kind: 'nvml' | 'dcgm'
  /** Adds a listener; returns a function that removes it. */
  subscribe(listener: GpuListener): () => void
}

/** A line logger, injected (library code never writes to the console). */
export type LogLine = (line: string) => void

// ---- the narrow view of the native addon the agent depends on (STYLE.md section 8) ----

/** What `init()` reports about the driver. */
export interface NvmlSystemInfo {
  readonly library: string
  readonly driverVersion: string
  readonly nvmlVersion: string
  readonly deviceCount: number
}

/** A MIG device as the addon reports it. */
export interface NvmlMigDevice {
  readonly slot: number
  readonly uuid?: string
  readonly gpuInstanceId?: number
  readonly computeInstanceId?: number
  readonly memTotalBytes?: number
  readonly memUsedBytes?: number
  readonly memFreeBytes?: number
  readonly gpuUtilPct?: number
  readonly memUtilPct?: number
}

/** Identity of one physical GPU. */
export interface NvmlDeviceInfo {
  readonly index: number
  readonly uuid?: string
  readonly name?: string
  readonly pciBusId?: string
  readonly migEnabled?: boolean
  readonly migPendingEnabled?: boolean
  readonly migDevices?: readonly NvmlMigDevice[]
  readonly unsupported: readonly string[]
  readonly fieldErrors?: Readonly<Record<string, string>>
}

/** One sample of one physical GPU's counters, in NVML's units. Absent: NOT_SUPPORTED; `unsupported`: no symbol. */
export interface NvmlDeviceSample {
  readonly gpuUtilPct?: number
  readonly memUtilPct?: number
  readonly memTotalBytes?: number
  readonly memReservedBytes?: number
  readonly memUsedBytes?: number
  readonly memFreeBytes?: number
  readonly powerMw?: number
  readonly energyMj?: number
  readonly temperatureC?: number
  readonly smClockMhz?: number
  readonly memClockMhz?: number
  readonly clockEventReasons?: number
  readonly eccCorrectedVolatile?: number
  readonly eccUncorrectedVolatile?: number
  readonly pcieTxKBps?: number
  readonly pcieRxKBps?: number
  readonly migEnabled?: boolean
  readonly migDevices?: readonly NvmlMigDevice[]
  readonly unsupported: readonly string[]
  readonly fieldErrors?: Readonly<Record<string, string>>
}

export interface NvmlProcessInfo {
  readonly pid: number
  readonly usedMemoryBytes?: number
  readonly gpuInstanceId?: number
  readonly computeInstanceId?: number
}

export interface NvmlProcessUtilization {
  readonly pid: number
  readonly timestampUs: number
  readonly smPct: number
  readonly memPct: number
  readonly encPct: number
  readonly decPct: number
}

/** An event from NVML's event set, or (with `error`) a failed wait. `index` is -1 when no device is known. */
export interface NvmlNativeEvent {
  readonly index: number
  readonly type?: number
  readonly data?: number
  readonly gpuInstanceId?: number
  readonly computeInstanceId?: number
  readonly error?: string
  readonly message?: string
}

/**
 * The part of the NVML addon the agent calls. `native/` implements it (see `loadNativeNvml`); tests pass fakes.
 * Every method may throw {@link NvmlError}-shaped errors (`code`, NVML's message); the source catches them.
 *
 * @example
 * ```ts
 * const nvml: NvmlBinding = loadNativeNvml()
 * const { deviceCount } = nvml.init()
 * const s = nvml.sample(0) // { gpuUtilPct: 93, powerMw: 412500, …, unsupported: [] }
 * ```
 */
export interface NvmlBinding {
  init(): NvmlSystemInfo
  shutdown(): void
  deviceInfo(index: number): NvmlDeviceInfo
  sample(index: number): NvmlDeviceSample
  processes(index: number): readonly NvmlProcessInfo[]
  processUtilization(index: number, sinceUs: number): readonly NvmlProcessUtilization[]
  /** Starts the native event thread; returns the devices registered and their masks. */
  startEvents(
    mask: number,
    onEvent: (e: NvmlNativeEvent) => void,
    waitTimeoutMs: number,
  ): ReadonlyArray<{ index: number; mask: number }>
  /** Stops the event thread; resolves once it has exited. */
  stopEvents(): Promise<void>
  /** `init()` on a worker thread (a real nvmlInit can take seconds without persistence mode). Optional. */
  initAsync?(): Promise<NvmlSystemInfo>
  /**
   * One sampling pass on a worker thread: per device its sample (or the error), and its processes and per-process
   * utilization when asked. Only the conversion to JS objects runs on the event loop. Optional.
   */
  samplePass?(indices: readonly number[], options: NvmlPassOptions): Promise<readonly NvmlPassResult[]>
}

export interface NvmlPassOptions {
  readonly processes: boolean
  readonly processUtilization: boolean
  /** Per device (same order as the indices): the last process-utilization timestamp seen, in µs. */
  readonly sinceUs: readonly number[]
}

/** One device's part of a {@link NvmlBinding.samplePass}. Errors are values here, never thrown. */
export interface NvmlPassResult {
  readonly index: number
  readonly sample?: NvmlDeviceSample
  readonly error?: unknown
  readonly processes?: readonly NvmlProcessInfo[]
  readonly processesError?: unknown
  readonly processUtilization?: readonly NvmlProcessUtilization[]
  readonly processUtilizationError?: unknown
}
