import { createDcgmSource } from '../sources/dcgm.js'
import { createNvmlSource } from '../sources/nvml.js'
import { loadNativeNvml } from '../sources/nvml-native.js'
import type { DurationMs } from '../types.js'
import type { GpuSource, LogLine } from './types.js'

/** How the agent reads GPUs (the `gpu` part of the agent's config). */
export interface GpuSourcesConfig {
  /** Sampling period of every GPU source (default 1000 ms). */
  readonly periodMs?: DurationMs
  /** Read GPUs through NVML (default true). */
  readonly nvml?: boolean
  /** The NVML library to open (default `TAILGUARD_NVML_LIBRARY`, else `libnvidia-ml.so.1`). */
  readonly nvmlLibrary?: string
  /** DCGM exporter's metrics URL; when set, a DCGM source is added. */
  readonly dcgmUrl?: string
  readonly log?: LogLine
}

/**
 * The agent's GPU sources from its config: NVML unless disabled (unavailable, with the reason, on machines
 * without NVML), and DCGM exporter when a URL is given.
 *
 * @example
 * ```ts
 * const gpu = createGpuCollector({ sources: createGpuSources({ periodMs: 1000, dcgmUrl: 'http://127.0.0.1:9400/metrics' }) })
 * ```
 */
export function createGpuSources(config: GpuSourcesConfig = {}): GpuSource[] {
  const every = config.periodMs ?? 1000
  const sources: GpuSource[] = []
  const log = config.log ?? (() => {})
  if (config.nvml !== false)
    sources.push(
      createNvmlSource(
        () => loadNativeNvml(config.nvmlLibrary !== undefined ? { library: config.nvmlLibrary } : {}),
        every,
        { log },
      ),
    )
  if (config.dcgmUrl !== undefined) sources.push(createDcgmSource({ url: config.dcgmUrl, every, log }))
  return sources
}
