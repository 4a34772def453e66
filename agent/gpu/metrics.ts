import { Gauge } from 'prom-client'
import type { Registry } from 'prom-client'
import type { GpuField } from '../../collector/index.js'
import type { ReplicaRef } from './attribution.js'
import type { GpuDeviceReading, GpuProcessReading } from './types.js'

/**
 * tailguard field → DCGM exporter metric name, help and the factor from tailguard's unit to DCGM's, so that
 * Grafana boards built for DCGM exporter work on the agent's `/metrics`.
 */
export const DCGM_METRIC_NAMES: ReadonlyArray<readonly [GpuField, string, string, number]> = [
  ['gpuUtilPct', 'DCGM_FI_DEV_GPU_UTIL', 'GPU utilization (in %).', 1],
  ['memUtilPct', 'DCGM_FI_DEV_MEM_COPY_UTIL', 'Memory utilization (in %).', 1],
  ['memUsedBytes', 'DCGM_FI_DEV_FB_USED', 'Framebuffer memory used (in MiB).', 1 / (1024 * 1024)],
  ['memFreeBytes', 'DCGM_FI_DEV_FB_FREE', 'Framebuffer memory free (in MiB).', 1 / (1024 * 1024)],
  ['memTotalBytes', 'DCGM_FI_DEV_FB_TOTAL', 'Framebuffer memory total (in MiB).', 1 / (1024 * 1024)],
  ['memReservedBytes', 'DCGM_FI_DEV_FB_RESERVED', 'Framebuffer memory reserved (in MiB).', 1 / (1024 * 1024)],
  ['powerW', 'DCGM_FI_DEV_POWER_USAGE', 'Power draw (in W).', 1],
  ['energyMj', 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION', 'Total energy consumption since boot (in mJ).', 1],
  ['temperatureC', 'DCGM_FI_DEV_GPU_TEMP', 'GPU temperature (in C).', 1],
  ['smClockMhz', 'DCGM_FI_DEV_SM_CLOCK', 'SM clock frequency (in MHz).', 1],
  ['memClockMhz', 'DCGM_FI_DEV_MEM_CLOCK', 'Memory clock frequency (in MHz).', 1],
  [
    'clockEventReasons',
    'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS',
    'Current clock event (throttle) reasons bitmask.',
    1,
  ],
  [
    'eccCorrectedVolatile',
    'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
    'Total number of single-bit volatile ECC errors.',
    1,
  ],
  [
    'eccUncorrectedVolatile',
    'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
    'Total number of double-bit volatile ECC errors.',
    1,
  ],
  ['pcieTxKBps', 'DCGM_FI_DEV_PCIE_TX_THROUGHPUT', 'PCIe TX throughput (in KB/s).', 1],
  ['pcieRxKBps', 'DCGM_FI_DEV_PCIE_RX_THROUGHPUT', 'PCIe RX throughput (in KB/s).', 1],
  [
    'grEngineActivePct',
    'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
    'Ratio of time the graphics engine is active.',
    0.01,
  ],
  ['smActivePct', 'DCGM_FI_PROF_SM_ACTIVE', 'Ratio of cycles an SM has at least 1 warp assigned.', 0.01],
  ['tensorActivePct', 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', 'Ratio of cycles the tensor pipe is active.', 0.01],
]

/** The labels DCGM exporter puts on every GPU series (plus its Kubernetes pod labels where it maps them). */
export const DCGM_LABELS = [
  'gpu',
  'UUID',
  'pci_bus_id',
  'device',
  'modelName',
  'Hostname',
  'GPU_I_PROFILE',
  'GPU_I_ID',
  'namespace',
  'pod',
  'container',
] as const

/** What the metrics read at each scrape: the latest reading of every device, the last XIDs, the processes. */
export interface GpuMetricsState {
  devices(): Iterable<GpuDeviceReading>
  processes(): Iterable<{ reading: GpuProcessReading; replica?: ReplicaRef }>
  /** The last XID per physical GPU. */
  lastXids(): Iterable<{ uuid: string; index: number; xid: number; name?: string; pciBusId?: string }>
  /** Events seen since start, by GPU and kind. */
  eventCounts(): Iterable<{ uuid: string; index: number; kind: string; count: number }>
  sourceStatus(): Iterable<{ name: string; up: boolean }>
}

/** DCGM exporter's label set for one reading. @example dcgmLabels(r, 'node-a').device // 'nvidia0' */
export function dcgmLabels(
  d: Pick<GpuDeviceReading, 'uuid' | 'index' | 'name' | 'pciBusId' | 'mig' | 'k8s'>,
  hostname: string,
): Partial<Record<(typeof DCGM_LABELS)[number], string>> {
  // Built in DCGM exporter's label order: gpu, UUID, pci_bus_id, device, modelName, Hostname, GPU_I_PROFILE, GPU_I_ID.
  const l: Partial<Record<(typeof DCGM_LABELS)[number], string>> = { gpu: String(d.index), UUID: d.uuid }
  if (d.pciBusId !== undefined) l.pci_bus_id = d.pciBusId
  l.device = `nvidia${d.index}`
  l.modelName = d.name ?? ''
  l.Hostname = hostname
  if (d.mig !== undefined) {
    if (d.mig.profile !== undefined) l.GPU_I_PROFILE = d.mig.profile
    l.GPU_I_ID = String(d.mig.gpuInstanceId)
  }
  if (d.k8s?.namespace !== undefined) l.namespace = d.k8s.namespace
  if (d.k8s?.pod !== undefined) l.pod = d.k8s.pod
  if (d.k8s?.container !== undefined) l.container = d.k8s.container
  return l
}

/**
 * Registers the GPU metrics on `registry`, read from `state` at each scrape: DCGM exporter's names and labels
 * where DCGM has the field (`DCGM_FI_DEV_GPU_UTIL`, `DCGM_FI_DEV_FB_USED`, `DCGM_FI_DEV_XID_ERRORS`, …), and
 * `tailguard_gpu_*` for what DCGM exporter cannot know (processes attributed to replicas, source health).
 *
 * @example
 * ```ts
 * registerGpuMetrics(registry, collectorState, os.hostname())
 * ```
 */
export function registerGpuMetrics(registry: Registry, state: GpuMetricsState, hostname: string): void {
  const labelNames = [...DCGM_LABELS]
  for (const [field, name, help, factor] of DCGM_METRIC_NAMES) {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset()
        for (const d of state.devices()) {
          const v = d.values[field]
          if (v !== undefined) this.set(dcgmLabels(d, hostname), v * factor)
        }
      },
    })
  }
  new Gauge({
    name: 'DCGM_FI_DEV_XID_ERRORS',
    help: 'Value of the last XID error encountered.',
    labelNames,
    registers: [registry],
    collect() {
      this.reset()
      for (const x of state.lastXids()) this.set(dcgmLabels(x, hostname), x.xid)
    },
  })
  const procLabels = ['gpu', 'UUID', 'Hostname', 'GPU_I_ID', 'pid', 'service', 'model', 'version', 'replica']
  const procGauge = (name: string, help: string, pick: (p: GpuProcessReading) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: procLabels,
      registers: [registry],
      collect() {
        this.reset()
        for (const { reading: p, replica } of state.processes()) {
          const v = pick(p)
          if (v === undefined) continue
          this.set(
            {
              gpu: String(p.index),
              UUID: p.uuid,
              Hostname: hostname,
              pid: String(p.pid),
              ...(p.gpuInstanceId !== undefined ? { GPU_I_ID: String(p.gpuInstanceId) } : {}),
              ...(replica ?? {}),
            },
            v,
          )
        }
      },
    })
  procGauge(
    'tailguard_gpu_process_memory_bytes',
    'GPU memory used by a process, by replica.',
    (p) => p.usedMemoryBytes,
  )
  procGauge(
    'tailguard_gpu_process_sm_util_percent',
    'SM utilization of a process (in %).',
    (p) => p.smUtilPct,
  )
  new Gauge({
    name: 'tailguard_gpu_events',
    help: 'GPU events (XID, ECC, GPU lost) seen since the agent started, by kind.',
    labelNames: ['gpu', 'UUID', 'Hostname', 'kind'],
    registers: [registry],
    collect() {
      this.reset()
      for (const e of state.eventCounts())
        this.set({ gpu: String(e.index), UUID: e.uuid, Hostname: hostname, kind: e.kind }, e.count)
    },
  })
  new Gauge({
    name: 'tailguard_gpu_source_up',
    help: '1 when the GPU source (nvml, dcgm) is reading GPUs, 0 when it is unavailable.',
    labelNames: ['source'],
    registers: [registry],
    collect() {
      this.reset()
      for (const s of state.sourceStatus()) this.set({ source: s.name }, s.up ? 1 : 0)
    },
  })
}
