export {
  littlesLaw,
  utilization,
  mm1MeanTimeInSystem,
  mm1MeanWait,
  mm1TimeInSystemPercentile,
  mm1WaitPercentile,
  md1MeanWait,
  kingmanMeanWait,
} from './queueing/single-server.js'
export {
  erlangC,
  mmcMeanWait,
  mmcMeanTimeInSystem,
  mmcWaitPercentile,
  allenCunneenMeanWait,
} from './queueing/multi-server.js'
export {
  batchServiceTimeMs,
  fitBatchServiceTime,
  windowedBatchThroughput,
  saturatedBatchThroughput,
  poissonBatchSizes,
  largestBatchWithinLatency,
} from './queueing/batching.js'
export type { BatchServiceModel, BatchServiceFit } from './queueing/batching.js'
export {
  utilizationKnee,
  mmcUtilizationKnee,
  maxUtilizationForPercentile,
  planCapacity,
  mmcServersForPercentile,
  costPerMillion,
} from './queueing/capacity.js'
export type { CapacityPlanInput, CapacityPlan } from './queueing/capacity.js'
export { applyActions } from './policy.js'
export type { EpochMs, FleetObservation, PhasePercentilesMs, Setpoints, Action, Policy } from './policy.js'
export { staticPolicy } from './policies/static.js'
export { hpaPolicy, kedaPolicy, hpaLoop } from './policies/hpa.js'
export type { HpaOptions, HpaState, HpaMetric, KedaOptions } from './policies/hpa.js'
export { kpaPolicy } from './policies/kpa.js'
export type { KpaOptions, KpaState } from './policies/kpa.js'
export { aimdPolicy } from './policies/aimd.js'
export type { AimdOptions, AimdState } from './policies/aimd.js'
export { runSimulation } from './sim/simulator.js'
export type {
  SimConfig,
  SimResult,
  SimSlo,
  SimRunOptions,
  SimTimeline,
  ReplicaModel,
  ServiceNoise,
  LatencyStats,
  ShedReason,
} from './sim/simulator.js'
export { createArrivals } from './sim/arrivals.js'
export type { ArrivalSpec, ArrivalSource, ArrivalDraft, TokenShape } from './sim/arrivals.js'
export { parseAzureTrace, AZURE_TRACE_ATTRIBUTION, findSharedTrace, DEFAULT_TRACE_FILE } from './sim/trace.js'
export type { Trace, TraceError } from './sim/trace.js'
export { EventHeap } from './sim/heap.js'
export { Rng } from './sim/rng.js'
export {
  BASELINE_POLICIES,
  createBaselinePolicy,
  replicaCapacityRps,
  peakRps,
  meanTokens,
  peakProvisionedReplicas,
  comparePolicies,
  findReplicas,
} from './sim/scenario.js'
export type {
  BaselinePolicyName,
  BaselineOptions,
  ReplicaTarget,
  ReplicaProbe,
  ReplicaSearch,
} from './sim/scenario.js'
export { formatResultsTable, renderHtmlReport } from './sim/report.js'
export type { Scenario } from './sim/report.js'
