export { createStore } from './create-store.js'
export type { StoreOptions } from './create-store.js'
export { DEFAULT_ROLLUPS } from './levels.js'
export type {
  Store,
  Selector,
  TimeRange,
  EpochMs,
  RequestCounts,
  ServiceInfo,
  IngestOutcome,
  RollupLevel,
  GpuSelector,
  GpuIdentity,
  GpuEventInfo,
  GpuProcessInfo,
  GpuInfo,
  GpuPoint,
  GpuSeries,
  SignalSeries,
  SignalPoint,
  ClassSignalPoint,
  ImportedHistogram,
  ImportedHistogramPoint,
  ImportedPrecision,
} from './types.js'
export { storeDatabase } from './handle.js'
export type { DB } from './schema.js'
