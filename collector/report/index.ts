export {
  PHASES,
  TOKEN_METRICS,
  METRICS,
  REQUEST_STATUSES,
  LABEL_NAMES,
  isPhase,
  isMetric,
  seriesKey,
} from './phases.js'
export type { Phase, TokenMetric, Metric, RequestStatus, SeriesLabels, LabelName } from './phases.js'
export {
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
  HISTOGRAM_HEADER_LIMITS,
} from './histogram.js'
export type { Histogram, LatencySummaryMs, HistogramCheck } from './histogram.js'
export {
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
  SeriesSignalsSchema,
  ClassSignalsSchema,
  BucketHistogramSchema,
  MAX_BUCKET_BOUNDS,
  bucketHistogramProblem,
  REPORT_LIMITS,
} from './schema.js'
export {
  strictValidator,
  isWellFormedUnicode,
  toWellFormedUnicode,
  firstIllFormedString,
} from './validate.js'
export type { ValidationProblem } from './validate.js'
export { checkHistogramHeader } from './histogram-header.js'
export type { HistogramHeader, HistogramHeaderLimits } from './histogram-header.js'
export type {
  SignalGauge,
  SignalCounter,
  SeriesSignals,
  ClassSignals,
  BucketHistogram,
  IntervalReport,
  ReportSeries,
  ReportAck,
  GpuField,
  GpuStat,
  GpuEvent,
  GpuProcess,
  GpuReportItem,
} from './schema.js'
export { mergeBuckets, bucketQuantileMs, layoutKey } from './buckets.js'
export type { BucketCounts, MergedBuckets } from './buckets.js'
export { logBandEdgesMs, bandCounts, MAX_BANDS_PER_DECADE } from './bands.js'
