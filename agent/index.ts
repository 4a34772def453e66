export { createRecorder } from './recorder.js'
export type { Recorder, SeriesHandle, DrainedInterval } from './recorder.js'
export type { RequestSample, SampleSink, Source, SourceStatus, DurationUs, DurationMs } from './types.js'
export {
  createGpuCollector,
  createGpuSources,
  createNvmlSource,
  createDcgmSource,
  loadNativeNvml,
  createPidResolver,
  createGpuFold,
  registerGpuMetrics,
  NvmlError,
} from './gpu/index.js'
export type {
  GpuCollector,
  GpuCollectorOptions,
  GpuSourcesConfig,
  GpuSource,
  GpuReading,
  GpuEventReading,
  NvmlBinding,
  ReplicaRef,
  ReplicaTarget,
  PidResolver,
  DcgmSourceOptions,
  NvmlSourceOptions,
} from './gpu/index.js'
