export { createRecorder } from './recorder.js'
export type { Recorder, SeriesHandle, DrainedInterval } from './recorder.js'
export type { RequestSample, SampleSink, Source, SourceStatus, DurationUs, DurationMs } from './types.js'
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
