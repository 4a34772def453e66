export { createRecorder } from './recorder.js'
export type { Recorder, SeriesHandle, DrainedInterval } from './recorder.js'
export type { RequestSample, SampleSink, Source, SourceStatus, DurationUs, DurationMs } from './types.js'
export { startAgent } from './agent.js'
export type { AgentOptions, AgentDeps, RunningAgent } from './agent.js'
export { createShipper } from './ship/shipper.js'
export type { Shipper, ShipperOptions, ShipperStats, SendResult } from './ship/shipper.js'
export { openSpool } from './ship/spool.js'
export type { Spool, SpooledReport } from './ship/spool.js'
export { runAgent } from './run.js'
export { DEMO_SLOS_YAML } from './demo/slos.js'
export { startDemoReplay } from './demo/replay.js'
export { createDemoFleet, seededRandom } from './demo/fleet.js'
export type { DemoArrival, DemoFleet } from './demo/fleet.js'
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
