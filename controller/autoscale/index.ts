export { createRecommendationBoard, refKey } from './recommendation.js'
export type {
  AutoscaleRef,
  AutoscaleCondition,
  AutoscaleSignals,
  AutoscaleSource,
  Recommendation,
  RecommendationBoard,
} from './recommendation.js'
export {
  AUTOSCALE_METRICS,
  DEFAULT_SIGNAL_TARGETS,
  AutoscaleQueryInvalid,
  parseAutoscaleQuery,
  metricValue,
  metricName,
} from './metrics.js'
export type { AutoscaleMetric, AutoscaleQuery } from './metrics.js'
export { startKedaScaler, EXTERNAL_SCALER_PROTO, DEFAULT_KEDA_PORT } from './keda-server.js'
export type { KedaScalerOptions, RunningKedaScaler, GrpcTls } from './keda-server.js'
export {
  buildExternalMetricsApp,
  formatQuantity,
  parseLabelSelector,
  EXTERNAL_METRICS,
  EXTERNAL_METRICS_GROUP_VERSION,
  DEFAULT_EXTERNAL_METRICS_PORT,
} from './external-metrics.js'
export type { ExternalMetricsOptions } from './external-metrics.js'
export { createAutoscaleRoutes, toAutoscaleAnswer, AutoscaleAnswerSchema } from './routes.js'
export { recommendationFromView } from './from-view.js'
export type { AutoscaleAnswer } from './routes.js'
export { buildAutoscaleHttp, DEFAULT_CONTROLLER_HTTP_PORT } from './http.js'
