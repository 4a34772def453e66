export { createGpuCollector } from './collector.js'
export type { GpuCollector, GpuCollectorOptions } from './collector.js'
export { createGpuSources } from './default-sources.js'
export type { GpuSourcesConfig } from './default-sources.js'
export { createGpuFold, MAX_EVENTS_PER_GPU } from './fold.js'
export type { GpuFold, ProcessAttributor } from './fold.js'
export { createPidResolver, parseCgroup, parseParentPid } from './attribution.js'
export type {
  ReplicaRef,
  ReplicaTarget,
  PidAttribution,
  PidResolver,
  PidResolverOptions,
} from './attribution.js'
export { registerGpuMetrics, dcgmLabels, DCGM_METRIC_NAMES, DCGM_LABELS } from './metrics.js'
export type { GpuMetricsState } from './metrics.js'
export { parsePromText } from './prom-text.js'
export type { PromSample } from './prom-text.js'
export {
  NVML_EVENT,
  DEFAULT_NVML_EVENT_MASK,
  CLOCK_EVENT_REASONS,
  eventKind,
  clockEventReasonNames,
  xidMessage,
} from './nvml-constants.js'
export type {
  GpuSource,
  GpuListener,
  GpuReading,
  GpuDeviceReading,
  GpuProcessReading,
  GpuEventReading,
  MigIdentity,
  LogLine,
  NvmlBinding,
  NvmlSystemInfo,
  NvmlDeviceInfo,
  NvmlDeviceSample,
  NvmlMigDevice,
  NvmlProcessInfo,
  NvmlProcessUtilization,
  NvmlNativeEvent,
  NvmlPassOptions,
  NvmlPassResult,
} from './types.js'
export { createNvmlSource } from '../sources/nvml.js'
export type { NvmlSourceOptions } from '../sources/nvml.js'
export {
  loadNativeNvml,
  findNvmlAddon,
  NvmlError,
  toNvmlError,
  DEFAULT_NVML_LIBRARY,
  NVML_ADDON_RELATIVE_PATH,
} from '../sources/nvml-native.js'
export type { LoadNativeNvmlOptions } from '../sources/nvml-native.js'
export { createDcgmSource, dcgmToReadings, DEFAULT_DCGM_URL, DCGM_FIELD_MAP } from '../sources/dcgm.js'
export type { DcgmSourceOptions } from '../sources/dcgm.js'
