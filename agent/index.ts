export { createRecorder, DEFAULT_RECORDER_LIMITS, OVERFLOW_LABEL } from './recorder.js'
export type { Recorder, SeriesHandle, DrainedInterval, RecorderLimits, RecorderStats } from './recorder.js'
export type {
  RequestSample,
  SampleSink,
  SignalObservation,
  Source,
  SourceStatus,
  DurationUs,
  DurationMs,
} from './types.js'
export { startAgent } from './agent.js'
export type { AgentOptions, AgentDeps, RunningAgent } from './agent.js'
export { createShipper, chunkSeries, DEFAULT_MAX_REPORT_BYTES } from './ship/shipper.js'
export { openDeadLetter, readDeadLetters, removeDeadLetter } from './ship/dead-letter.js'
export type { DeadLetter, DeadLetterBox, DeadLetterFile } from './ship/dead-letter.js'
export type { Shipper, ShipperOptions, ShipperStats, SendResult } from './ship/shipper.js'
export { openSpool } from './ship/spool.js'
export type { Spool, SpooledReport } from './ship/spool.js'
export { runAgent, otlpGrpcPortOf, isLoopbackHost } from './run.js'
export { DEMO_SLOS_YAML } from './demo/slos.js'
export { startDemoReplay, createSdkEmitter } from './demo/replay.js'
export { startServingDemo, DEMO_PROXY_CLASSES } from './demo/serving.js'
export { demoControllerTarget } from './demo/controller-target.js'
export type { DemoControllerTargetOptions } from './demo/controller-target.js'
export type { ReplicaCounts, ServingDemo, ServingDemoOptions } from './demo/serving.js'
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
export { decodeTracesProtobuf } from './sources/otlp/decode-protobuf.js'
export { createSourceSet } from './sources/set.js'
export type { SourceSet } from './sources/set.js'
export { decodeTracesJson, decodeTracesJsonValue } from './sources/otlp/decode-json.js'
export {
  createSpanMapper,
  resolveMappingConfig,
  OTLP_MAPPING_DEFAULTS,
  VLLM_REQUEST_SPAN_NAME,
  VLLM_ATTR,
  TRITON_ATTR_MODEL,
  TRITON_ATTR_VERSION,
  TRITON_COMPUTE_SPAN_NAME,
  TRITON_EVENT,
} from './sources/otlp/mapping.js'
export type { OtlpMappingConfig, OtlpMappingOptions, SpanMapper, MapOutcome } from './sources/otlp/mapping.js'
export {
  otlpReceiver,
  OTLP_DEFAULT_BODY_LIMIT_BYTES,
  OTLP_DEFAULT_MAX_DECOMPRESSED_BYTES,
} from './sources/otlp/receiver.js'
export type { OtlpReceiverOptions, OtlpExportResult } from './sources/otlp/receiver.js'
export { startOtlpGrpcReceiver, OTLP_GRPC_TRACE_EXPORT_PATH } from './sources/otlp/grpc-receiver.js'
export type {
  OtlpGrpcReceiver,
  OtlpGrpcReceiverOptions,
  OtlpGrpcExportResult,
} from './sources/otlp/grpc-receiver.js'
export { STATUS_CODE_UNSET, STATUS_CODE_OK, STATUS_CODE_ERROR } from './sources/otlp/types.js'
export type { OtlpSpan, OtlpEvent, Attributes, AttributeValue, DecodeResult } from './sources/otlp/types.js'
export { createInferenceSdk, SDK_ATTR, SDK_FIRST_TOKEN_EVENT } from './sdk/inference-sdk.js'
export type { InferenceSdk, InferenceSdkOptions, InferenceRequest, RequestEnd } from './sdk/inference-sdk.js'
export {
  createProxy,
  PROXY_DEFAULTS,
  PRIORITY_HEADER,
  DEADLINE_HEADER,
  REQUEST_ID_HEADER,
} from './proxy/proxy.js'
export type { Proxy, ProxyOptions, ProxyDeps, ProxyCounts, ProxyRoute } from './proxy/proxy.js'
export { createAdmission } from './proxy/admission.js'
export type {
  Admission,
  AdmissionOptions,
  ClassSetpoint,
  Decision,
  ShedReason,
  Ticket,
  Pending,
} from './proxy/admission.js'
export { Gradient2Limit } from './proxy/gradient2.js'
export type { Gradient2Options } from './proxy/gradient2.js'
export {
  createSetpointsState,
  createSetpointsGroup,
  SetpointsPutSchema,
  SetpointsViewSchema,
  ClassSetpointSchema,
} from './proxy/setpoints.js'
export type {
  SetpointsGroup,
  SetpointsState,
  SetpointsView,
  SetpointsPut,
  PutOutcome,
} from './proxy/setpoints.js'
export { setpointsRoutes, UpstreamsPutSchema } from './proxy/routes.js'
export type { SetpointsRoutesOptions } from './proxy/routes.js'
export { createUpstreamSet, parseUpstreamUrl } from './proxy/upstreams.js'
export type { UpstreamSet, UpstreamView, UpstreamState } from './proxy/upstreams.js'
export { createProxySource, proxyOptionsFromConfig } from './proxy/source.js'
export type { ProxySource } from './proxy/source.js'
export { nextTraceparent, requestId } from './proxy/trace.js'
export type { RunningAgentWithProxy } from './run.js'
export { registerServeModel } from './cli/serve-model.js'
export { buildModelServer, MODEL_SERVER_DEFAULTS } from './model-server/server.js'
export type { ModelServer, ModelServerOptions } from './model-server/server.js'
export { createMlp, argmax, VOCAB } from './model-server/mlp.js'
export type { Mlp, MlpShape } from './model-server/mlp.js'
export { createBatcher } from './model-server/batcher.js'
export type { Batcher, BatchingSettings, BatcherStats } from './model-server/batcher.js'
export { createEngine, tokenize } from './model-server/engine.js'
export type { Engine, FinishReason, GenerationHooks } from './model-server/engine.js'
export { registerAgent, grpcPortFlag, proxyFlags } from './cli/agent.js'
export { registerScrape } from './cli/scrape.js'
export { registerDeadLetter } from './cli/dead-letter.js'
export {
  createScrapeSource,
  parseScrapeArg,
  readExposition,
  diffSnapshots,
  detectKind,
  describeScrape,
  formatDescription,
  ADAPTERS,
  SCRAPE_KINDS,
} from './sources/scrape/index.js'
export type {
  ScrapeTarget,
  ScrapeKind,
  ServerKind,
  Snapshot,
  ScrapeDescription,
  ScrapeOutcome,
} from './sources/scrape/index.js'
