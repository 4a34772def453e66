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
  poissonQuantile,
  adaptiveWindowMs,
  batchLatencyMs,
  batchFormationDelayMs,
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
export type {
  EpochMs,
  FleetObservation,
  LlmSignals,
  PhasePercentilesMs,
  Setpoints,
  Action,
  Policy,
} from './policy.js'
export { tailguardPolicy, resolveTailguardOptions, TAILGUARD_DEFAULTS } from './policies/tailguard/index.js'
export type { TailguardOptions, TailguardFeatures, TailguardState } from './policies/tailguard/index.js'
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
export {
  parseAzureTrace,
  AZURE_TRACE_ATTRIBUTION,
  shippedTracePath,
  DEFAULT_TRACE_FILE,
} from './sim/trace.js'
export type { Trace, TraceError, TraceRow, TraceColumns } from './sim/trace.js'
export { scanTraceFile, TraceFileReader, TraceFileError, TRACE_REORDER_ROWS } from './sim/trace-file.js'
export type { TraceFileStats } from './sim/trace-file.js'
export { EventHeap } from './sim/heap.js'
export { Rng } from './sim/rng.js'
export {
  BASELINE_POLICIES,
  POLICIES,
  TAILGUARD_PARTS,
  createBaselinePolicy,
  createTailguardPolicy,
  tailguardOptionsFor,
  replicaCapacityRps,
  peakRps,
  meanTokens,
  peakProvisionedReplicas,
  comparePolicies,
  findReplicas,
} from './sim/scenario.js'
export type {
  BaselinePolicyName,
  PolicyName,
  BaselineOptions,
  ReplicaTarget,
  ReplicaProbe,
  ReplicaSearch,
} from './sim/scenario.js'
export { formatResultsTable, renderHtmlReport } from './sim/report.js'
export type { Scenario } from './sim/report.js'
export { registerSim } from './cli/sim.js'
export { createWhatifRoutes } from './sim/routes.js'
export {
  planWhatif,
  runWhatif,
  coinciding,
  WhatifRequestSchema,
  WhatifAnswerSchema,
  WHATIF_MAX_REQUESTS,
  WHATIF_MAX_TRACE_BYTES,
} from './sim/whatif.js'
export type { WhatifRequest, WhatifAnswer } from './sim/whatif.js'
export {
  createRecommendationBoard,
  AUTOSCALE_METRICS,
  DEFAULT_SIGNAL_TARGETS,
  AutoscaleQueryInvalid,
  parseAutoscaleQuery,
  metricValue,
  metricName,
  startKedaScaler,
  EXTERNAL_SCALER_PROTO,
  DEFAULT_KEDA_PORT,
  buildExternalMetricsApp,
  formatQuantity,
  parseLabelSelector,
  EXTERNAL_METRICS,
  EXTERNAL_METRICS_GROUP_VERSION,
  DEFAULT_EXTERNAL_METRICS_PORT,
  createAutoscaleRoutes,
  toAutoscaleAnswer,
  AutoscaleAnswerSchema,
  recommendationFromView,
  buildAutoscaleHttp,
  DEFAULT_CONTROLLER_HTTP_PORT,
} from './autoscale/index.js'
export type {
  AutoscaleRef,
  AutoscaleCondition,
  AutoscaleSignals,
  AutoscaleSource,
  Recommendation,
  RecommendationBoard,
  AutoscaleMetric,
  AutoscaleQuery,
  KedaScalerOptions,
  RunningKedaScaler,
  GrpcTls,
  ExternalMetricsOptions,
  AutoscaleAnswer,
} from './autoscale/index.js'
export { registerController } from './cli/controller.js'
export { registerDecisions, formatTimeline, describeChange } from './cli/decisions.js'
export { createLiveController, targetName, initialSetpoints, railsOf, predict } from './live/controller.js'
export type {
  LiveController,
  LiveControllerOptions,
  LiveTarget,
  ControllerLogger,
  RoundResult,
} from './live/controller.js'
export { runController, budgetReader, gpuUtilizationReader } from './live/run.js'
export type { RunningController, BudgetSource } from './live/run.js'
export {
  buildObservation,
  observedEnd,
  windowIntervals,
  OBS_WINDOWS_S,
  PHASE_METRICS,
} from './live/observe.js'
export type { ObservationReader, ObservedTarget, SignalSummary, BuildOptions } from './live/observe.js'
export { applyRails, INITIAL_RAIL_STATE, RAIL_DEFAULTS } from './live/rails.js'
export type { Rails, RailState, RailsResult } from './live/rails.js'
export { createTargetPolicy, LIVE_POLICIES, DEFAULT_LIVE_POLICY } from './live/policies.js'
export { httpJson, describeFailure } from './live/http.js'
export type { HttpResult, HttpOptions } from './live/http.js'
export {
  createActuator,
  createAgentActuator,
  createModelServerActuator,
  createTritonActuator,
  createKubernetesActuator,
  createProcessActuator,
  createReplicaSetActuator,
  createWebhookActuator,
  putBatching,
  parseBatching,
  SERVICE_ACCOUNT_DIR,
} from './live/actuators/index.js'
export type {
  Actuator,
  ActuatorChange,
  ActuatorContext,
  ActuatorReading,
  AdmissionCaps,
  ApplyResult,
  Knob,
  ReadResult,
  AgentActuatorOptions,
  ModelServerActuatorOptions,
  TritonActuatorOptions,
  KubernetesActuatorOptions,
  ProcessActuatorOptions,
  ReplicaSet,
  ReplicaSetActuatorOptions,
  WebhookActuatorOptions,
} from './live/actuators/index.js'
