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
export { startDemoReplay, createSdkEmitter } from './demo/replay.js'
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
export { STATUS_CODE_UNSET, STATUS_CODE_OK, STATUS_CODE_ERROR } from './sources/otlp/types.js'
export type { OtlpSpan, OtlpEvent, Attributes, AttributeValue, DecodeResult } from './sources/otlp/types.js'
export { createInferenceSdk, SDK_ATTR, SDK_FIRST_TOKEN_EVENT } from './sdk/inference-sdk.js'
export type { InferenceSdk, InferenceSdkOptions, InferenceRequest, RequestEnd } from './sdk/inference-sdk.js'
