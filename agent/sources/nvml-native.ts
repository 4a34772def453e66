import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type {
  NvmlBinding,
  NvmlDeviceInfo,
  NvmlDeviceSample,
  NvmlNativeEvent,
  NvmlPassOptions,
  NvmlPassResult,
  NvmlProcessInfo,
  NvmlProcessUtilization,
  NvmlSystemInfo,
} from '../gpu/types.js'

/** The addon's file, relative to the repository root (node-gyp builds it during `npm ci`). */
export const NVML_ADDON_RELATIVE_PATH = join('build', 'Release', 'tailguard_nvml.node')
/** The library the addon opens unless `TAILGUARD_NVML_LIBRARY` names another. */
export const DEFAULT_NVML_LIBRARY = 'libnvidia-ml.so.1'

/**
 * An error from NVML or from loading it. `code` is NVML's return code name (`NVML_ERROR_GPU_IS_LOST`) or one of
 * the addon's own (`TG_NVML_DLOPEN`, `TG_NVML_ADDON_MISSING`, `TG_NVML_UNSUPPORTED`, …); the message carries
 * NVML's own error string.
 *
 * @example
 * ```ts
 * try { nvml.sample(0) } catch (e) { if (e instanceof NvmlError && e.code === 'NVML_ERROR_GPU_IS_LOST') markLost(0) }
 * ```
 */
export class NvmlError extends Error {
  override readonly name = 'NvmlError'
  readonly code: string
  /** NVML's `nvmlReturn_t`, when the error came from NVML. */
  readonly nvmlReturn?: number
  /** The NVML function that failed. */
  readonly nvmlFunction?: string

  constructor(message: string, code: string, nvmlReturn?: number, nvmlFunction?: string) {
    super(message)
    this.code = code
    if (nvmlReturn !== undefined) this.nvmlReturn = nvmlReturn
    if (nvmlFunction !== undefined) this.nvmlFunction = nvmlFunction
  }
}

/** Converts whatever the addon threw into an {@link NvmlError}. @example toNvmlError(new Error('x')).code // 'TG_NVML_ERROR' */
export function toNvmlError(err: unknown): NvmlError {
  if (err instanceof NvmlError) return err
  const e = err as { message?: unknown; code?: unknown; nvmlReturn?: unknown; nvmlFunction?: unknown }
  return new NvmlError(
    typeof e?.message === 'string' ? e.message : String(err),
    typeof e?.code === 'string' ? e.code : 'TG_NVML_ERROR',
    typeof e?.nvmlReturn === 'number' ? e.nvmlReturn : undefined,
    typeof e?.nvmlFunction === 'string' ? e.nvmlFunction : undefined,
  )
}

interface RawAddon {
  load(path: string): string
  init(): NvmlSystemInfo
  shutdown(): void
  deviceInfo(index: number): NvmlDeviceInfo
  sample(index: number): NvmlDeviceSample
  processes(index: number): NvmlProcessInfo[]
  processUtilization(index: number, sinceUs: number): NvmlProcessUtilization[]
  startEvents(
    mask: number,
    onEvent: (e: NvmlNativeEvent) => void,
    timeoutMs: number,
  ): { index: number; mask: number }[]
  stopEvents(): Promise<void>
  initAsync(): Promise<NvmlSystemInfo>
  samplePass(indices: readonly number[], options: NvmlPassOptions): Promise<NvmlPassResult[]>
}

/** Finds `build/Release/tailguard_nvml.node` above this file (works from the sources and from `dist/`). */
export function findNvmlAddon(from: string = dirname(fileURLToPath(import.meta.url))): string | undefined {
  let dir = from
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, NVML_ADDON_RELATIVE_PATH)
    if (existsSync(candidate)) return candidate
    const parent = dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  return undefined
}

export interface LoadNativeNvmlOptions {
  /** The NVML library to dlopen; default `TAILGUARD_NVML_LIBRARY`, else `libnvidia-ml.so.1`. */
  readonly library?: string
  /** The `.node` file; default: found by {@link findNvmlAddon}. */
  readonly addonPath?: string
}

/**
 * Loads the addon and dlopens NVML; returns the {@link NvmlBinding} the NVML source uses. Throws an
 * {@link NvmlError} when the addon was not built (`TG_NVML_ADDON_MISSING`) or the library cannot be opened
 * (`TG_NVML_DLOPEN`, with dlerror's text). The addon is process-wide: NVML is opened once per process.
 *
 * @example
 * ```ts
 * const source = createNvmlSource(() => loadNativeNvml(), 1000) // unavailable, with the reason, where no NVML is
 * ```
 */
export function loadNativeNvml(options: LoadNativeNvmlOptions = {}): NvmlBinding {
  const addonPath = options.addonPath ?? findNvmlAddon()
  if (addonPath === undefined || !existsSync(addonPath))
    throw new NvmlError(
      `NVML addon not built (${NVML_ADDON_RELATIVE_PATH} missing; run npm rebuild)`,
      'TG_NVML_ADDON_MISSING',
    )
  let raw: RawAddon
  try {
    raw = createRequire(import.meta.url)(addonPath) as RawAddon
  } catch (err) {
    throw new NvmlError(`NVML addon failed to load: ${(err as Error).message}`, 'TG_NVML_ADDON_LOAD')
  }
  const library = options.library ?? (process.env['TAILGUARD_NVML_LIBRARY'] || DEFAULT_NVML_LIBRARY)
  const call = <T>(fn: () => T): T => {
    try {
      return fn()
    } catch (err) {
      throw toNvmlError(err)
    }
  }
  const loaded = call(() => raw.load(library))
  if (loaded !== library)
    throw new NvmlError(
      `NVML is already open from ${loaded} in this process; cannot also open ${library}`,
      'TG_NVML_ALREADY_LOADED',
    )
  return {
    init: () => call(() => raw.init()),
    shutdown: () => call(() => raw.shutdown()),
    deviceInfo: (i) => call(() => raw.deviceInfo(i)),
    sample: (i) => call(() => raw.sample(i)),
    processes: (i) => call(() => raw.processes(i)),
    processUtilization: (i, since) => call(() => raw.processUtilization(i, since)),
    startEvents: (mask, onEvent, timeoutMs) => call(() => raw.startEvents(mask, onEvent, timeoutMs)),
    stopEvents: () => raw.stopEvents(),
    initAsync: () => raw.initAsync().catch((err: unknown) => Promise.reject(toNvmlError(err))),
    samplePass: (indices, options) => raw.samplePass(indices, options),
  }
}
