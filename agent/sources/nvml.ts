import type { GpuField } from '../../collector/index.js'
import { DEFAULT_NVML_EVENT_MASK, NVML_EVENT, eventKind, xidMessage } from '../gpu/nvml-constants.js'
import type {
  GpuDeviceReading,
  GpuEventReading,
  GpuListener,
  GpuProcessReading,
  GpuSource,
  LogLine,
  NvmlBinding,
  NvmlDeviceInfo,
  NvmlDeviceSample,
  NvmlNativeEvent,
  NvmlPassResult,
} from '../gpu/types.js'
import type { DurationMs, SampleSink, SourceStatus } from '../types.js'
import { toNvmlError } from './nvml-native.js'

export interface NvmlSourceOptions {
  /** NVML event types to wait on (default: XID critical errors and double-bit ECC errors). */
  readonly eventMask?: number
  /** How long one `nvmlEventSetWait` may block the native thread; bounds how long `stop()` takes. */
  readonly eventWaitMs?: number
  /** Read running processes and per-process utilization (default true). */
  readonly processes?: boolean
  readonly log?: LogLine
  readonly clock?: () => number
}

interface DeviceState {
  readonly index: number
  uuid: string
  name?: string
  pciBusId?: string
  lost: boolean
  lastProcessSampleUs: number
  processesUnsupported: boolean
  processUtilUnsupported: boolean
}

const NVML_TO_FIELD: ReadonlyArray<readonly [keyof NvmlDeviceSample, GpuField, number]> = [
  ['gpuUtilPct', 'gpuUtilPct', 1],
  ['memUtilPct', 'memUtilPct', 1],
  ['memUsedBytes', 'memUsedBytes', 1],
  ['memFreeBytes', 'memFreeBytes', 1],
  ['memTotalBytes', 'memTotalBytes', 1],
  ['memReservedBytes', 'memReservedBytes', 1],
  ['powerMw', 'powerW', 1e-3],
  ['energyMj', 'energyMj', 1],
  ['temperatureC', 'temperatureC', 1],
  ['smClockMhz', 'smClockMhz', 1],
  ['memClockMhz', 'memClockMhz', 1],
  ['clockEventReasons', 'clockEventReasons', 1],
  ['eccCorrectedVolatile', 'eccCorrectedVolatile', 1],
  ['eccUncorrectedVolatile', 'eccUncorrectedVolatile', 1],
  ['pcieTxKBps', 'pcieTxKBps', 1],
  ['pcieRxKBps', 'pcieRxKBps', 1],
]

/**
 * The NVML source: samples every GPU each `every` ms through the addon, and waits for XID and other critical
 * events on the addon's native thread. Without NVML (no driver, no addon) it is still a Source: `status()` says
 * `unavailable` with the dlopen or NVML error, and nothing else in the agent is affected.
 *
 * Devices are sampled one per event-loop turn (setImmediate between them), so one pass never holds the loop for
 * more than one device's calls. A device that returns NVML_ERROR_GPU_IS_LOST yields one `gpu_lost` event and is
 * retried on later passes.
 *
 * @example
 * ```ts
 * const nvml = createNvmlSource(() => loadNativeNvml(), 1000)
 * nvml.subscribe({ reading: (r) => fold.add(r), event: (e) => fold.event(e) })
 * nvml.start(recorder)
 * nvml.status() // { state: 'unavailable', reason: 'dlopen libnvidia-ml.so.1: … cannot open shared object file …' }
 * ```
 */
export function createNvmlSource(
  load: () => NvmlBinding,
  every: DurationMs = 1000,
  options: NvmlSourceOptions = {},
): GpuSource {
  const clock = options.clock ?? Date.now
  const log = options.log ?? (() => {})
  const listeners = new Set<GpuListener>()
  let status: SourceStatus = { state: 'unavailable', reason: 'not started' }
  let nvml: NvmlBinding | undefined
  let devices: DeviceState[] = []
  let timer: NodeJS.Timeout | undefined
  let sink: SampleSink | undefined
  let passRunning = false
  let stopped = false
  let eventsRunning = false
  let pendingImmediate: NodeJS.Immediate | undefined
  let starting = false
  let inFlightPass: Promise<void> | undefined

  const emitReading = (r: Parameters<GpuListener['reading']>[0]) => {
    for (const l of listeners) l.reading(r)
  }
  const emitEvent = (e: GpuEventReading) => {
    for (const l of listeners) l.event(e)
  }

  const identify = (info: NvmlDeviceInfo, d: DeviceState) => {
    d.uuid = info.uuid ?? d.uuid
    if (info.name !== undefined) d.name = info.name
    if (info.pciBusId !== undefined) d.pciBusId = info.pciBusId
  }

  const onNativeEvent = (e: NvmlNativeEvent) => {
    if (e.error !== undefined) {
      log(`nvml: event wait failed: ${e.message ?? e.error}`)
      sink?.drop('nvml_event_wait_error')
      return
    }
    const d = devices[e.index]
    const type = e.type ?? 0
    const kind = eventKind(type)
    const ev: GpuEventReading = {
      timeMs: clock(),
      uuid: d?.uuid ?? '',
      index: d?.index ?? Math.max(0, e.index),
      kind,
      ...(type === NVML_EVENT.xidCriticalError && e.data !== undefined ? { xid: e.data } : {}),
      ...(type !== NVML_EVENT.xidCriticalError && e.data !== undefined ? { data: e.data } : {}),
      ...(e.gpuInstanceId !== undefined ? { gpuInstanceId: e.gpuInstanceId } : {}),
      ...(e.computeInstanceId !== undefined ? { computeInstanceId: e.computeInstanceId } : {}),
      ...(type === NVML_EVENT.xidCriticalError && e.data !== undefined && xidMessage(e.data) !== undefined
        ? { message: xidMessage(e.data) }
        : {}),
    }
    emitEvent(ev)
  }

  const isUnsupported = (err: unknown) => {
    const code = toNvmlError(err).code
    return code === 'TG_NVML_UNSUPPORTED' || code === 'NVML_ERROR_NOT_SUPPORTED'
  }

  // The synchronous path (a binding without samplePass): one device's calls, errors as values.
  const readDeviceSync = (d: DeviceState, b: NvmlBinding): NvmlPassResult => {
    try {
      if (d.uuid === '') identify(b.deviceInfo(d.index), d)
      const sample = b.sample(d.index)
      const out: { -readonly [K in keyof NvmlPassResult]: NvmlPassResult[K] } = { index: d.index, sample }
      if (options.processes !== false) {
        try {
          out.processes = b.processes(d.index)
        } catch (err) {
          out.processesError = err
        }
        try {
          out.processUtilization = b.processUtilization(d.index, d.lastProcessSampleUs)
        } catch (err) {
          out.processUtilizationError = err
        }
      }
      return out
    } catch (err) {
      return { index: d.index, error: err }
    }
  }

  const applyResult = (
    d: DeviceState,
    res: NvmlPassResult,
    devicesOut: GpuDeviceReading[],
    procsOut: GpuProcessReading[],
  ) => {
    const s = res.sample
    if (s === undefined) {
      const e = toNvmlError(res.error)
      if (e.code === 'NVML_ERROR_GPU_IS_LOST') {
        if (!d.lost) {
          d.lost = true
          emitEvent({ timeMs: clock(), uuid: d.uuid, index: d.index, kind: 'gpu_lost', message: e.message })
        }
      } else {
        log(`nvml: sampling GPU ${d.index} failed: ${e.message}`)
        sink?.drop('nvml_sample_error')
      }
      return
    }
    if (d.lost) {
      d.lost = false
      emitEvent({ timeMs: clock(), uuid: d.uuid, index: d.index, kind: 'gpu_recovered' })
    }
    const values: Partial<Record<GpuField, number>> = {}
    for (const [from, to, scale] of NVML_TO_FIELD) {
      const v = s[from]
      if (typeof v === 'number') values[to] = scale === 1 ? v : v * scale
    }
    const unsupported = [...s.unsupported]
    const base = {
      uuid: d.uuid,
      index: d.index,
      ...(d.name !== undefined ? { name: d.name } : {}),
      ...(d.pciBusId !== undefined ? { pciBusId: d.pciBusId } : {}),
    }
    if (options.processes !== false) {
      const byPid = new Map<number, { -readonly [K in keyof GpuProcessReading]: GpuProcessReading[K] }>()
      if (!d.processesUnsupported) {
        if (res.processesError !== undefined) {
          if (isUnsupported(res.processesError)) d.processesUnsupported = true
          else sink?.drop('nvml_process_error')
        }
        for (const p of res.processes ?? [])
          byPid.set(p.pid, {
            uuid: d.uuid,
            index: d.index,
            pid: p.pid,
            ...(p.usedMemoryBytes !== undefined ? { usedMemoryBytes: p.usedMemoryBytes } : {}),
            ...(p.gpuInstanceId !== undefined ? { gpuInstanceId: p.gpuInstanceId } : {}),
            ...(p.computeInstanceId !== undefined ? { computeInstanceId: p.computeInstanceId } : {}),
          })
      }
      if (d.processesUnsupported) unsupported.push('processes')
      if (!d.processUtilUnsupported) {
        if (res.processUtilizationError !== undefined) {
          if (isUnsupported(res.processUtilizationError)) d.processUtilUnsupported = true
          else sink?.drop('nvml_process_error')
        }
        for (const u of res.processUtilization ?? []) {
          if (u.timestampUs > d.lastProcessSampleUs) d.lastProcessSampleUs = u.timestampUs
          const p = byPid.get(u.pid) ?? { uuid: d.uuid, index: d.index, pid: u.pid }
          p.smUtilPct = u.smPct
          p.memUtilPct = u.memPct
          byPid.set(u.pid, p)
        }
      }
      if (d.processUtilUnsupported) unsupported.push('processUtilization')
      for (const p of byPid.values()) procsOut.push(p)
    }
    devicesOut.push({ ...base, values, ...(unsupported.length > 0 ? { unsupported } : {}) })
    for (const m of s.migDevices ?? []) {
      if (m.gpuInstanceId === undefined) continue
      const mv: Partial<Record<GpuField, number>> = {}
      if (m.memUsedBytes !== undefined) mv.memUsedBytes = m.memUsedBytes
      if (m.memFreeBytes !== undefined) mv.memFreeBytes = m.memFreeBytes
      if (m.memTotalBytes !== undefined) mv.memTotalBytes = m.memTotalBytes
      if (m.gpuUtilPct !== undefined) mv.gpuUtilPct = m.gpuUtilPct
      if (m.memUtilPct !== undefined) mv.memUtilPct = m.memUtilPct
      devicesOut.push({
        ...base,
        mig: {
          gpuInstanceId: m.gpuInstanceId,
          ...(m.computeInstanceId !== undefined ? { computeInstanceId: m.computeInstanceId } : {}),
          ...(m.uuid !== undefined ? { uuid: m.uuid } : {}),
        },
        values: mv,
      })
    }
  }

  const finishPass = (timeMs: number, devicesOut: GpuDeviceReading[], procsOut: GpuProcessReading[]) => {
    passRunning = false
    if (!stopped) emitReading({ source: 'nvml', timeMs, devices: devicesOut, processes: procsOut })
  }

  // One pass. With samplePass, every NVML call runs on a worker thread; without it, one device per event-loop turn.
  const pass = () => {
    const b = nvml
    if (b === undefined || passRunning || stopped) return
    passRunning = true
    const timeMs = clock()
    const devicesOut: GpuDeviceReading[] = []
    const procsOut: GpuProcessReading[] = []
    if (b.samplePass !== undefined) {
      const wantProcs = options.processes !== false
      inFlightPass = b
        .samplePass(
          devices.map((d) => d.index),
          {
            processes: wantProcs && devices.some((d) => !d.processesUnsupported),
            processUtilization: wantProcs && devices.some((d) => !d.processUtilUnsupported),
            sinceUs: devices.map((d) => d.lastProcessSampleUs),
          },
        )
        .then(
          (results) => {
            if (stopped) return finishPass(timeMs, devicesOut, procsOut)
            for (const r of results) {
              const d = devices[r.index]
              if (d !== undefined) applyResult(d, r, devicesOut, procsOut)
            }
            finishPass(timeMs, devicesOut, procsOut)
          },
          (err: unknown) => {
            log(`nvml: sampling pass failed: ${toNvmlError(err).message}`)
            sink?.drop('nvml_sample_error')
            passRunning = false
          },
        )
        .finally(() => {
          inFlightPass = undefined
        })
      return
    }
    let i = 0
    const step = () => {
      pendingImmediate = undefined
      if (stopped) {
        passRunning = false
        return
      }
      const d = devices[i++]
      if (d !== undefined) {
        applyResult(d, readDeviceSync(d, b), devicesOut, procsOut)
        pendingImmediate = setImmediate(step)
        return
      }
      finishPass(timeMs, devicesOut, procsOut)
    }
    step()
  }

  return {
    name: 'nvml',
    kind: 'nvml',
    status: () => status,
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    async start(s) {
      if (timer !== undefined || nvml !== undefined || starting) return
      sink = s
      stopped = false
      starting = true
      status = { state: 'unavailable', reason: 'initializing NVML' }
      let b: NvmlBinding
      try {
        b = load()
        const info = b.initAsync !== undefined ? await b.initAsync() : b.init()
        if (stopped) {
          b.shutdown()
          status = { state: 'unavailable', reason: 'stopped' }
          return
        }
        devices = Array.from({ length: info.deviceCount }, (_, index) => ({
          index,
          uuid: '',
          lost: false,
          lastProcessSampleUs: 0,
          processesUnsupported: false,
          processUtilUnsupported: false,
        }))
        for (const d of devices) {
          try {
            identify(b.deviceInfo(d.index), d)
          } catch (err) {
            log(`nvml: GPU ${d.index}: ${toNvmlError(err).message}`)
          }
        }
        log(
          `nvml: ${info.deviceCount} GPU(s), driver ${info.driverVersion}, NVML ${info.nvmlVersion} (${info.library})`,
        )
      } catch (err) {
        status = { state: 'unavailable', reason: toNvmlError(err).message }
        log(`nvml: unavailable: ${status.reason}`)
        return
      } finally {
        starting = false
      }
      nvml = b
      status = { state: 'ok' }
      try {
        b.startEvents(options.eventMask ?? DEFAULT_NVML_EVENT_MASK, onNativeEvent, options.eventWaitMs ?? 250)
        eventsRunning = true
      } catch (err) {
        log(`nvml: events unavailable: ${toNvmlError(err).message}`)
      }
      pass()
      timer = setInterval(pass, every)
      timer.unref()
    },
    async stop() {
      stopped = true
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      if (pendingImmediate !== undefined) clearImmediate(pendingImmediate)
      pendingImmediate = undefined
      passRunning = false
      const b = nvml
      nvml = undefined
      if (b === undefined) return
      await inFlightPass // NVML is shut down only once no pass is using it
      if (eventsRunning) await b.stopEvents()
      eventsRunning = false
      try {
        b.shutdown()
      } catch (err) {
        log(`nvml: shutdown: ${toNvmlError(err).message}`)
      }
      status = { state: 'unavailable', reason: 'stopped' }
    },
  }
}
