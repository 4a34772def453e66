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
  mergeHistograms,
  summarizeMs,
  toRecordableUs,
  HISTOGRAM_HIGHEST_US,
  HISTOGRAM_LOWEST_US,
  HISTOGRAM_DIGITS,
} from './histogram.js'
export type { Histogram, LatencySummaryMs } from './histogram.js'
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
} from './schema.js'
export type {
  IntervalReport,
  ReportSeries,
  ReportAck,
  GpuField,
  GpuStat,
  GpuEvent,
  GpuProcess,
  GpuReportItem,
} from './schema.js'
