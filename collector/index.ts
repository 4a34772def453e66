export {
  PHASES,
  TOKEN_METRICS,
  METRICS,
  REQUEST_STATUSES,
  LABEL_NAMES,
  isPhase,
  isMetric,
  seriesKey,
  newHistogram,
  encodeHistogram,
  decodeHistogram,
  tryDecodeHistogram,
  inspectHistogram,
  encodeBuckets,
  tickIndex,
  TICKS_PER_US,
  HISTOGRAM_RELATIVE_ERROR,
  mergeHistograms,
  summarizeMs,
  toRecordableUs,
  HISTOGRAM_HIGHEST_US,
  HISTOGRAM_LOWEST_US,
  HISTOGRAM_DIGITS,
  IntervalReportSchema,
  ReportSeriesSchema,
  SeriesLabelsSchema,
  ReportAckSchema,
  REPORT_VERSION,
  GPU_FIELDS,
  GpuReportItemSchema,
  GpuStatSchema,
  GpuEventSchema,
  GpuProcessSchema,
  SIGNAL_GAUGES,
  SIGNAL_COUNTERS,
  REPORT_LIMITS,
  isWellFormedUnicode,
  toWellFormedUnicode,
  strictValidator,
  SeriesSignalsSchema,
  ClassSignalsSchema,
  BucketHistogramSchema,
  MAX_BUCKET_BOUNDS,
  bucketHistogramProblem,
  mergeBuckets,
  bandCounts,
  logBandEdgesMs,
  MAX_BANDS_PER_DECADE,
  bucketQuantileMs,
  layoutKey,
} from './report/index.js'
export type {
  SignalGauge,
  SignalCounter,
  SeriesSignals,
  ClassSignals,
  BucketHistogram,
  BucketCounts,
  MergedBuckets,
  Phase,
  TokenMetric,
  Metric,
  RequestStatus,
  SeriesLabels,
  LabelName,
  Histogram,
  LatencySummaryMs,
  HistogramCheck,
  IntervalReport,
  ReportSeries,
  ReportAck,
  GpuField,
  GpuStat,
  GpuEvent,
  GpuProcess,
  GpuReportItem,
} from './report/index.js'
export type {
  Store,
  Selector,
  TimeRange,
  EpochMs,
  RequestCounts,
  ServiceInfo,
  IngestOutcome,
  RollupLevel,
  StoreOptions,
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
} from './store/index.js'
export { DEFAULT_ROLLUPS } from './store/levels.js'
export { createStore, runCollector } from './deferred.js'
export {
  CONFIG_DEFAULTS,
  DEFAULT_COLLECTOR_PORT,
  DEFAULT_OTLP_PORT,
  DEFAULT_OTLP_GRPC_PORT,
  readConfigFile,
  resolveConfig,
} from './config/index.js'
export type {
  TailguardConfig,
  CollectorConfig,
  AgentConfig,
  StartConfig,
  ControllerConfig,
  ControllerTargetConfig,
  ActuatorConfig,
} from './config/index.js'
export {
  CliError,
  processIO,
  assertPortsFree,
  explainListenError,
  intArg,
  numberArg,
  listening,
  LOG_LEVELS,
  loadConfig,
  makeLogger,
  portArg,
  signalLatch,
  untilSignal,
  withCommonOptions,
  collectorCommand,
  registerCollector,
  registerMigrate,
} from './cli/index.js'
export type { CliIO, PortClaim, RegisterCommand } from './cli/index.js'
export type { RunCollectorExtra, RunningCollector } from './run.js'
export { serverTimeoutOptions, answerClientError, DEFAULT_SERVER_TIMEOUTS } from './http-limits.js'
export type { ServerTimeouts } from './http-limits.js'
export { packageRoot, packageVersion } from './paths.js'
export { BadRequest, NotFound, TailguardError, WhatifBusy, WhatifTimeout } from './errors.js'
export { createTokenAuth } from './auth.js'
export type { Scope, TokenEntry } from './auth.js'
export { createControllerStore, CONDITION_TYPES } from './controllers/persistence.js'
export type {
  ControllerStore,
  ControllerMode,
  ControllerCondition,
  ConditionType,
  ControllerRecord,
  DecisionRecord,
  DecisionOutcome,
  NewDecision,
  LeaseResult,
} from './controllers/persistence.js'
export { signatureHeader, verifySignature, SIGNATURE_HEADER, countAtOrBelow } from './slo/index.js'
export type { SloEngine } from './slo/index.js'
export { parseDurationMs, parseTimeMs } from './time.js'
export {
  costPerMillion,
  goodputPerSecond,
  joulesPerToken,
  bucketFractionAtOrBelow,
  gpuHourPrice,
} from './live/figures.js'
export type { GpuPricing, PriceSource } from './live/figures.js'
export { serviceFigures, heldGpus, latencyThresholds } from './live/service-figures.js'
export type { ServiceFigures, Figure, HeldGpu, LatencyThreshold } from './live/service-figures.js'
export { createFigureRoutes } from './routes/figures.js'
export type { FigureRoutesOptions } from './routes/figures.js'
export { closestNames } from './routes/closest.js'
