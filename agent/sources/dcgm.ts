import type { GpuField } from '../../collector/index.js'
import { parsePromText } from '../gpu/prom-text.js'
import type { PromSample } from '../gpu/prom-text.js'
import { xidMessage } from '../gpu/nvml-constants.js'
import { failureNote, fetchOrOwn } from '../proxy/h1-fetch.js'
import type { HttpFetch } from '../proxy/h1-fetch.js'
import { periodic } from './periodic.js'
import type {
  GpuDeviceReading,
  GpuEventReading,
  GpuListener,
  GpuReading,
  GpuSource,
  LogLine,
} from '../gpu/types.js'
import type { DurationMs, SampleSink, SourceStatus } from '../types.js'

/** DCGM exporter's default endpoint. */
export const DEFAULT_DCGM_URL = 'http://127.0.0.1:9400/metrics'

const MIB = 1024 * 1024

/** DCGM field → tailguard field and the factor from DCGM's unit to tailguard's. */
export const DCGM_FIELD_MAP: ReadonlyMap<string, readonly [GpuField, number]> = new Map([
  ['DCGM_FI_DEV_GPU_UTIL', ['gpuUtilPct', 1]],
  ['DCGM_FI_DEV_MEM_COPY_UTIL', ['memUtilPct', 1]],
  ['DCGM_FI_DEV_FB_USED', ['memUsedBytes', MIB]],
  ['DCGM_FI_DEV_FB_FREE', ['memFreeBytes', MIB]],
  ['DCGM_FI_DEV_FB_TOTAL', ['memTotalBytes', MIB]],
  ['DCGM_FI_DEV_FB_RESERVED', ['memReservedBytes', MIB]],
  ['DCGM_FI_DEV_POWER_USAGE', ['powerW', 1]],
  ['DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION', ['energyMj', 1]],
  ['DCGM_FI_DEV_GPU_TEMP', ['temperatureC', 1]],
  ['DCGM_FI_DEV_SM_CLOCK', ['smClockMhz', 1]],
  ['DCGM_FI_DEV_MEM_CLOCK', ['memClockMhz', 1]],
  ['DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', ['clockEventReasons', 1]],
  ['DCGM_FI_DEV_CLOCKS_EVENT_REASONS', ['clockEventReasons', 1]],
  ['DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', ['eccCorrectedVolatile', 1]],
  ['DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', ['eccUncorrectedVolatile', 1]],
  ['DCGM_FI_DEV_PCIE_TX_THROUGHPUT', ['pcieTxKBps', 1]],
  ['DCGM_FI_DEV_PCIE_RX_THROUGHPUT', ['pcieRxKBps', 1]],
  ['DCGM_FI_PROF_GR_ENGINE_ACTIVE', ['grEngineActivePct', 100]],
  ['DCGM_FI_PROF_SM_ACTIVE', ['smActivePct', 100]],
  ['DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', ['tensorActivePct', 100]],
])

/** Profiling PCIe byte rates, used when the NVML-based throughput fields are not exported. @example PCIE_BYTES.get('DCGM_FI_PROF_PCIE_TX_BYTES') // 'pcieTxKBps' */
export const PCIE_BYTES: ReadonlyMap<string, GpuField> = new Map([
  ['DCGM_FI_PROF_PCIE_TX_BYTES', 'pcieTxKBps'],
  ['DCGM_FI_PROF_PCIE_RX_BYTES', 'pcieRxKBps'],
])

/**
 * Every DCGM field name tailguard reads (the others are reported as unknown by `tailguard scrape`).
 *
 * @example DCGM_KNOWN_FIELDS.has('DCGM_FI_DEV_POWER_USAGE') // true
 */
export const DCGM_KNOWN_FIELDS: ReadonlySet<string> = new Set([
  ...DCGM_FIELD_MAP.keys(),
  ...PCIE_BYTES.keys(),
  'DCGM_FI_DEV_XID_ERRORS',
])

interface Entity {
  uuid: string
  index: number
  name?: string
  pciBusId?: string
  gpuInstanceId?: number
  profile?: string
  k8s?: { namespace?: string; pod?: string; container?: string }
  values: Partial<Record<GpuField, number>>
  pcieBytes: Partial<Record<GpuField, number>>
  xid?: number
}

/**
 * Folds one scrape of DCGM exporter into device readings (one per GPU and per MIG instance) and the last XID per
 * entity. Where `DCGM_FI_DEV_GPU_UTIL` is absent (MIG instances), `DCGM_FI_PROF_GR_ENGINE_ACTIVE` stands in.
 *
 * @example
 * ```ts
 * const { devices } = dcgmToReadings(parsePromText(text).samples)
 * ```
 */
export function dcgmToReadings(samples: readonly PromSample[]): {
  devices: GpuDeviceReading[]
  xids: Map<string, { uuid: string; index: number; gpuInstanceId?: number; xid: number }>
} {
  const entities = new Map<string, Entity>()
  for (const s of samples) {
    const mapped = DCGM_FIELD_MAP.get(s.name)
    const pcie = PCIE_BYTES.get(s.name)
    const isXid = s.name === 'DCGM_FI_DEV_XID_ERRORS'
    if (mapped === undefined && pcie === undefined && !isXid) continue
    const uuid = s.labels['UUID'] ?? ''
    const index = Number(s.labels['gpu'] ?? NaN)
    if (uuid === '' || !Number.isInteger(index) || index < 0) continue
    const gi = s.labels['GPU_I_ID']
    const gpuInstanceId =
      gi !== undefined && gi !== '' && Number.isInteger(Number(gi)) ? Number(gi) : undefined
    const key = gpuInstanceId === undefined ? uuid : `${uuid}/${gpuInstanceId}`
    let e = entities.get(key)
    if (e === undefined) {
      e = { uuid, index, values: {}, pcieBytes: {} }
      if (gpuInstanceId !== undefined) e.gpuInstanceId = gpuInstanceId
      const name = s.labels['modelName']
      if (name) e.name = name
      const pci = s.labels['pci_bus_id']
      if (pci) e.pciBusId = pci
      const profile = s.labels['GPU_I_PROFILE']
      if (profile) e.profile = profile
      const k8s: { namespace?: string; pod?: string; container?: string } = {}
      if (s.labels['namespace']) k8s.namespace = s.labels['namespace']
      if (s.labels['pod']) k8s.pod = s.labels['pod']
      if (s.labels['container']) k8s.container = s.labels['container']
      if (Object.keys(k8s).length > 0) e.k8s = k8s
      entities.set(key, e)
    }
    if (!Number.isFinite(s.value)) continue
    if (mapped !== undefined) e.values[mapped[0]] = s.value * mapped[1]
    else if (pcie !== undefined) e.pcieBytes[pcie] = s.value / 1024
    else if (isXid) e.xid = s.value
  }
  const devices: GpuDeviceReading[] = []
  const xids = new Map<string, { uuid: string; index: number; gpuInstanceId?: number; xid: number }>()
  for (const [key, e] of entities) {
    for (const f of ['pcieTxKBps', 'pcieRxKBps'] as const)
      if (e.values[f] === undefined && e.pcieBytes[f] !== undefined) e.values[f] = e.pcieBytes[f]
    if (e.values.gpuUtilPct === undefined && e.values.grEngineActivePct !== undefined)
      e.values.gpuUtilPct = e.values.grEngineActivePct
    devices.push({
      uuid: e.uuid,
      index: e.index,
      ...(e.name !== undefined ? { name: e.name } : {}),
      ...(e.pciBusId !== undefined ? { pciBusId: e.pciBusId } : {}),
      ...(e.gpuInstanceId !== undefined
        ? {
            mig: {
              gpuInstanceId: e.gpuInstanceId,
              ...(e.profile !== undefined ? { profile: e.profile } : {}),
            },
          }
        : {}),
      ...(e.k8s !== undefined ? { k8s: e.k8s } : {}),
      values: e.values,
    })
    if (e.xid !== undefined)
      xids.set(key, {
        uuid: e.uuid,
        index: e.index,
        ...(e.gpuInstanceId !== undefined ? { gpuInstanceId: e.gpuInstanceId } : {}),
        xid: e.xid,
      })
  }
  return { devices, xids }
}

export interface DcgmSourceOptions {
  /** The exporter's metrics URL (default {@link DEFAULT_DCGM_URL}). */
  readonly url?: string
  /** Scrape period (default 1000 ms; DCGM exporter itself collects every 30 s by default). */
  readonly every?: DurationMs
  /** Per-scrape timeout (default min(every, 5000) ms). */
  readonly timeoutMs?: DurationMs
  /** How `/metrics` is fetched (default: the agent's own HTTP/1.1 client, closed by `stop`). */
  readonly fetch?: HttpFetch
  readonly log?: LogLine
  readonly clock?: () => number
}

/**
 * A source that scrapes DCGM exporter's `/metrics` and delivers the same readings as the NVML source. A change of
 * `DCGM_FI_DEV_XID_ERRORS` (the last XID of a GPU) between scrapes becomes an `xid` event. `status()` reflects the
 * last scrape: `unavailable` with the reason when the exporter cannot be reached.
 *
 * @example
 * ```ts
 * const dcgm = createDcgmSource({ url: 'http://dcgm-exporter:9400/metrics', every: 5000 })
 * dcgm.subscribe({ reading: (r) => fold.add(r), event: (e) => fold.event(e) })
 * dcgm.start(recorder)
 * ```
 */
export function createDcgmSource(options: DcgmSourceOptions = {}): GpuSource {
  const url = options.url ?? DEFAULT_DCGM_URL
  const every = options.every ?? 1000
  const timeoutMs = options.timeoutMs ?? Math.min(every, 5000)
  const http = fetchOrOwn(options.fetch)
  const clock = options.clock ?? Date.now
  const log = options.log ?? (() => {})
  const listeners = new Set<GpuListener>()
  let status: SourceStatus = { state: 'unavailable', reason: `not scraped yet (${url})` }
  let sink: SampleSink | undefined
  let lastXid = new Map<string, number>()
  let firstScrape = true

  const scrape = async () => {
    const timeMs = clock()
    let text: string
    try {
      const res = await http.fetch(url, {
        signal: AbortSignal.timeout(timeoutMs),
        headers: { accept: 'text/plain' },
      })
      if (!res.ok) throw new Error(failureNote(res))
      text = await res.text()
    } catch (err) {
      const reason = `scrape ${url} failed: ${(err as Error).message}`
      if (status.state === 'ok' || status.reason !== reason) log(`dcgm: ${reason}`)
      status = { state: 'unavailable', reason }
      return
    }
    const { samples, malformed } = parsePromText(text)
    if (malformed > 0) sink?.drop('dcgm_malformed_line', malformed)
    const { devices, xids } = dcgmToReadings(samples)
    if (devices.length === 0) {
      status = { state: 'unavailable', reason: `no DCGM_FI_* GPU metrics at ${url}` }
      return
    }
    status = { state: 'ok' }
    const reading: GpuReading = { source: 'dcgm', timeMs, devices, processes: [] }
    for (const l of listeners) l.reading(reading)
    const next = new Map<string, number>()
    for (const [key, x] of xids) {
      next.set(key, x.xid)
      const before = lastXid.get(key)
      if (!firstScrape && x.xid !== 0 && x.xid !== before) {
        const msg = xidMessage(x.xid)
        const ev: GpuEventReading = {
          source: 'dcgm',
          timeMs,
          uuid: x.uuid,
          index: x.index,
          kind: 'xid',
          xid: x.xid,
          ...(x.gpuInstanceId !== undefined ? { gpuInstanceId: x.gpuInstanceId } : {}),
          ...(msg !== undefined ? { message: msg } : {}),
        }
        for (const l of listeners) l.event(ev)
      }
    }
    lastXid = next
    firstScrape = false
  }

  const poll = periodic(scrape, every)

  return {
    name: 'dcgm',
    kind: 'dcgm',
    status: () => status,
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    start(s) {
      sink = s
      poll.start()
    },
    async stop() {
      await poll.stop()
      await http.close()
    },
  }
}
