import { isMetric } from '../../../collector/index.js'
import type { LabelName, Metric, Phase, RequestStatus, SeriesLabels } from '../../../collector/index.js'
import type { DurationUs, SampleSink } from '../../types.js'
import { STATUS_CODE_ERROR } from './types.js'
import type { AttributeValue, Attributes, OtlpSpan } from './types.js'

/**
 * How spans become observations. A plain object; {@link OTLP_MAPPING_DEFAULTS} holds the defaults and
 * {@link resolveMappingConfig} merges a partial config over them.
 *
 * @example
 * ```ts
 * const config = resolveMappingConfig({ spanNamePhases: { 'tokenize': 'preprocess', 'infer': 'kernel' } })
 * ```
 */
export interface OtlpMappingConfig {
  /**
   * Attribute keys for each label, in priority order. Span attributes win over resource attributes; within
   * each, the first key with a non-empty value wins.
   */
  readonly labels: Readonly<Record<LabelName, readonly string[]>>
  /** Service label when no key matched (the report schema requires a non-empty service). */
  readonly defaultService: string
  /** Span attribute naming the span's phase (`total` for a whole request). Wins over everything else. */
  readonly phaseAttribute: string
  /** Span attribute with `ok`, `error` or `shed`; overrides the span status. */
  readonly statusAttribute: string
  /**
   * Span attribute set to `true` by tailguard's in-process SDK on spans it has already recorded: such spans
   * are accepted and not recorded again, so an app exporting its spans to the agent is not counted twice.
   */
  readonly recordedAttribute: string
  /** Exact span name → phase. `total` marks a span that is a whole request. */
  readonly spanNamePhases: Readonly<Record<string, Metric>>
  /** Span names accepted and ignored (neither recorded nor counted as refused), e.g. transport wrappers. */
  readonly ignoredSpanNames: readonly string[]
  /** Attributes holding the number of output tokens of a request span, in priority order. */
  readonly outputTokenAttributes: readonly string[]
  /** Span events marking the first output token of a request span (TTFT = event time − span start). */
  readonly firstTokenEvents: readonly string[]
  /**
   * Whether a root span of kind SERVER (no parent) with no other rule is a whole request: what HTTP and
   * gRPC server instrumentation emits for each call, so an instrumented server needs no tailguard attributes.
   */
  readonly serverRootSpansAreRequests: boolean
  /** Whether to read vLLM's request span (`llm_request` with `gen_ai.latency.*` attributes). */
  readonly vllm: boolean
  /** Whether to read Triton's OpenTelemetry trace mode (model request spans and `compute` spans). */
  readonly triton: boolean
  /** Phases for Triton's compute sub-intervals. */
  readonly tritonPhases: {
    /** COMPUTE_START → COMPUTE_INPUT_END: input tensors copied into the backend. */
    readonly computeInput: Phase
    /** COMPUTE_INPUT_END → COMPUTE_OUTPUT_START: the model's execution. */
    readonly computeInfer: Phase
    /** COMPUTE_OUTPUT_START → COMPUTE_END: output tensors copied out of the backend. */
    readonly computeOutput: Phase
  }
  /** Triton compute spans kept waiting for their request span (they usually end, and export, first). */
  readonly maxPendingComputeSpans: number
}

/**
 * Partial mapping config as users write it; nested `labels` and `tritonPhases` merge key by key.
 *
 * @example
 * ```ts
 * const options: OtlpMappingOptions = { labels: { replica: ['k8s.pod.name'] }, triton: false }
 * ```
 */
export type OtlpMappingOptions = Partial<Omit<OtlpMappingConfig, 'labels' | 'tritonPhases'>> & {
  readonly labels?: Partial<Record<LabelName, readonly string[]>>
  readonly tritonPhases?: Partial<OtlpMappingConfig['tritonPhases']>
}

// vLLM: `vllm/tracing.py` SpanAttributes (checked in vllm-project/vllm source): the request span is named
// `llm_request` (SERVER kind, made in the output processor when a request finishes) and carries
// gen_ai.latency.time_in_queue, gen_ai.latency.time_to_first_token, gen_ai.latency.e2e,
// gen_ai.latency.time_in_model_prefill, gen_ai.latency.time_in_model_decode,
// gen_ai.latency.time_in_model_inference (prefill + decode), gen_ai.latency.time_in_model_forward and
// gen_ai.latency.time_in_model_execute (V0 engine with --collect-detailed-traces), all in SECONDS as
// floats (differences of time.time() / monotonic stamps), and gen_ai.usage.prompt_tokens,
// gen_ai.usage.completion_tokens, gen_ai.response.model, gen_ai.request.id.
// Not confirmed: the unit of time_in_model_forward/execute (the V0 engine measured them in ms and, as we
// read it, divided by 1000 before setting the attribute); we treat them as seconds like the others.
/** Name of vLLM's per-request span. @example span.name === VLLM_REQUEST_SPAN_NAME */
export const VLLM_REQUEST_SPAN_NAME = 'llm_request'
/** vLLM request-span attributes tailguard reads (seconds, except the token count). @example span.attributes[VLLM_ATTR.ttft] */
export const VLLM_ATTR = {
  queue: 'gen_ai.latency.time_in_queue',
  ttft: 'gen_ai.latency.time_to_first_token',
  e2e: 'gen_ai.latency.e2e',
  prefill: 'gen_ai.latency.time_in_model_prefill',
  decode: 'gen_ai.latency.time_in_model_decode',
  forward: 'gen_ai.latency.time_in_model_forward',
  completionTokens: 'gen_ai.usage.completion_tokens',
  promptTokens: 'gen_ai.usage.prompt_tokens',
} as const

/** Span attributes that carry a request's prompt tokens (OTel GenAI, then vLLM's older name). @example INPUT_TOKEN_ATTRS[0] // 'gen_ai.usage.input_tokens' */
export const INPUT_TOKEN_ATTRS = ['gen_ai.usage.input_tokens', VLLM_ATTR.promptTokens] as const

// Triton: src/tracer.cc (triton-inference-server/server), OpenTelemetry trace mode
// (--trace-config mode=opentelemetry): per model request a span named after the model with attributes
// triton.model_name, triton.model_version (int), triton.trace_id, triton.trace_parent_id and events
// REQUEST_START, QUEUE_START, REQUEST_END; under it a span named `compute` with events COMPUTE_START,
// COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END. Both end at their *_END event. The request spans
// hang under a root span opened by the HTTP/gRPC frontend (named `InferRequest` in the docs we read; we
// did not find the constant in source), which carries transport events only: it is ignored by default.
/** Attribute naming the model on Triton's request spans. @example span.attributes[TRITON_ATTR_MODEL] // 'resnet50' */
export const TRITON_ATTR_MODEL = 'triton.model_name'
/** Attribute with the model version (an int) on Triton's request spans. @example span.attributes[TRITON_ATTR_VERSION] // 2 */
export const TRITON_ATTR_VERSION = 'triton.model_version'
/** Name of Triton's compute span (child of a request span). @example span.name === TRITON_COMPUTE_SPAN_NAME */
export const TRITON_COMPUTE_SPAN_NAME = 'compute'
/** Timestamp events of Triton's spans that tailguard reads. @example span.events.find((e) => e.name === TRITON_EVENT.queueStart) */
export const TRITON_EVENT = {
  queueStart: 'QUEUE_START',
  computeStart: 'COMPUTE_START',
  computeInputEnd: 'COMPUTE_INPUT_END',
  computeOutputStart: 'COMPUTE_OUTPUT_START',
  computeEnd: 'COMPUTE_END',
} as const

/**
 * The default mapping: OpenTelemetry semantic-convention attributes for labels, `tailguard.*` attributes,
 * a small span-name table, and vLLM and Triton support on.
 *
 * @example
 * ```ts
 * OTLP_MAPPING_DEFAULTS.labels.model // ['gen_ai.request.model', 'gen_ai.response.model', 'triton.model_name', 'model']
 * ```
 */
export const OTLP_MAPPING_DEFAULTS: OtlpMappingConfig = {
  labels: {
    service: ['service.name'],
    model: ['gen_ai.request.model', 'gen_ai.response.model', TRITON_ATTR_MODEL, 'model'],
    version: [TRITON_ATTR_VERSION, 'model.version', 'service.version'],
    replica: ['service.instance.id', 'k8s.pod.name'],
    node: ['host.name', 'k8s.node.name'],
  },
  defaultService: 'unknown_service',
  phaseAttribute: 'tailguard.phase',
  statusAttribute: 'tailguard.status',
  recordedAttribute: 'tailguard.recorded',
  spanNamePhases: {
    routing: 'routing',
    route: 'routing',
    network: 'network',
    serialization: 'serialization',
    serialize: 'serialization',
    deserialize: 'serialization',
    queue: 'queue',
    retrieval: 'retrieval',
    retrieve: 'retrieval',
    preprocess: 'preprocess',
    tokenize: 'preprocess',
    h2d: 'h2d',
    kernel: 'kernel',
    d2h: 'd2h',
    postprocess: 'postprocess',
    detokenize: 'postprocess',
    prefill: 'prefill',
    decode: 'decode',
  },
  ignoredSpanNames: ['InferRequest'],
  outputTokenAttributes: [
    'tailguard.output_tokens',
    'gen_ai.usage.output_tokens',
    VLLM_ATTR.completionTokens,
  ],
  firstTokenEvents: ['tailguard.first_token', 'first_token'],
  serverRootSpansAreRequests: true,
  vllm: true,
  triton: true,
  tritonPhases: { computeInput: 'h2d', computeInfer: 'kernel', computeOutput: 'd2h' },
  maxPendingComputeSpans: 4096,
}

/**
 * Merges user options over {@link OTLP_MAPPING_DEFAULTS} (label key lists and Triton phases key by key)
 * and freezes the result.
 *
 * @example
 * ```ts
 * const cfg = resolveMappingConfig({ labels: { model: ['my.model'] }, triton: false })
 * ```
 */
export function resolveMappingConfig(options: OtlpMappingOptions = {}): Readonly<OtlpMappingConfig> {
  const d = OTLP_MAPPING_DEFAULTS
  return Object.freeze({
    ...d,
    ...options,
    labels: Object.freeze({ ...d.labels, ...options.labels }),
    tritonPhases: Object.freeze({ ...d.tritonPhases, ...options.tritonPhases }),
    spanNamePhases: Object.freeze({ ...(options.spanNamePhases ?? d.spanNamePhases) }),
  })
}

/**
 * What one batch of spans came to. `refused` spans were counted through `sink.drop(reason)`.
 *
 * @example
 * ```ts
 * const { accepted, refused, refusedBy } = mapper.map(spans, recorder) // refusedBy: { unknown_phase: 2 }
 * ```
 */
export interface MapOutcome {
  readonly accepted: number
  readonly refused: number
  /** Refusals by reason (`unknown_phase`, `negative_duration`). */
  readonly refusedBy: Readonly<Record<string, number>>
}

/**
 * Turns decoded spans into recorder calls. Stateful only for Triton: compute spans wait (bounded) for their
 * request span, which usually arrives in a later export batch.
 *
 * @example
 * ```ts
 * const mapper = createSpanMapper({ spanNamePhases: { infer: 'kernel' } })
 * const outcome = mapper.map(decoded.spans, recorder)
 * ```
 */
export interface SpanMapper {
  map(spans: readonly OtlpSpan[], sink: SampleSink): MapOutcome
  /** Records waiting Triton compute spans on their own (without their request's labels) and forgets them. */
  flushPending(sink: SampleSink): void
  readonly config: Readonly<OtlpMappingConfig>
}

/** Label values are capped at the report schema's 256 characters (never splitting a pair) and may not contain NUL. */
function labelValue(v: AttributeValue | undefined): string {
  if (v === undefined) return ''
  let s: string
  if (typeof v === 'string') s = v
  else if (typeof v === 'number' || typeof v === 'boolean') s = String(v)
  else return ''
  if (s.includes('\u0000')) s = s.replaceAll('\u0000', '')
  if (s.length > 256) {
    // Never split a surrogate pair: a lone half is not well-formed Unicode.
    const cut = s.charCodeAt(255) >= 0xd800 && s.charCodeAt(255) <= 0xdbff ? 255 : 256
    s = s.slice(0, cut)
  }
  // Lone surrogates (from `\ud800` escapes in JSON) are repaired to U+FFFD, and counted, by the recorder.
  return s
}

function numberAttr(attrs: Attributes, key: string): number | undefined {
  const v = attrs[key]
  if (typeof v === 'number' && Number.isFinite(v)) return v
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v)
    if (Number.isFinite(n)) return n
  }
  return undefined
}

const SPAN_KIND_SERVER = 2

const secondsToUs = (s: number | undefined): DurationUs | undefined => (s === undefined ? undefined : s * 1e6)

interface PendingCompute {
  readonly span: OtlpSpan
}

class SpanMapperImpl implements SpanMapper {
  readonly config: Readonly<OtlpMappingConfig>
  readonly #ignored: ReadonlySet<string>
  readonly #resourceLabels = new WeakMap<Attributes, SeriesLabels>()
  readonly #pendingCompute = new Map<string, PendingCompute>()
  #refused: Record<string, number> = {}
  #refusedCount = 0
  #sink: SampleSink | undefined

  constructor(config: Readonly<OtlpMappingConfig>) {
    this.config = config
    this.#ignored = new Set(config.ignoredSpanNames)
  }

  #refuse(reason: string): void {
    this.#refusedCount++
    this.#refused[reason] = (this.#refused[reason] ?? 0) + 1
    this.#sink?.drop(reason)
  }

  #labelsOfResource(resource: Attributes): SeriesLabels {
    let l = this.#resourceLabels.get(resource)
    if (l) return l
    const pick = (keys: readonly string[]) => {
      for (const k of keys) {
        const v = labelValue(resource[k])
        if (v !== '') return v
      }
      return ''
    }
    const c = this.config.labels
    const service = pick(c.service)
    l = {
      service: service === '' ? this.config.defaultService : service,
      model: pick(c.model),
      version: pick(c.version),
      replica: pick(c.replica),
      node: pick(c.node),
    }
    this.#resourceLabels.set(resource, l)
    return l
  }

  labels(span: OtlpSpan): SeriesLabels {
    const base = this.#labelsOfResource(span.resource)
    const a = span.attributes
    const c = this.config.labels
    const pick = (keys: readonly string[], fallback: string) => {
      for (const k of keys) {
        const v = a[k]
        if (v !== undefined) {
          const s = labelValue(v)
          if (s !== '') return s
        }
      }
      return fallback
    }
    const service = pick(c.service, base.service)
    const model = pick(c.model, base.model)
    const version = pick(c.version, base.version)
    const replica = pick(c.replica, base.replica)
    const node = pick(c.node, base.node)
    // The resource's own object when no span attribute overrides it: the recorder's cache then hits.
    if (
      service === base.service &&
      model === base.model &&
      version === base.version &&
      replica === base.replica &&
      node === base.node
    )
      return base
    return { service, model, version, replica, node }
  }

  #status(span: OtlpSpan): { status: RequestStatus; errorClass?: string } {
    const a = span.attributes
    const explicit = a[this.config.statusAttribute]
    const errorType = labelValue(a['error.type']).slice(0, 128)
    if (explicit === 'shed') return { status: 'shed', errorClass: errorType || 'shed' }
    if (explicit === 'error' || span.statusCode === STATUS_CODE_ERROR) {
      const message = span.statusMessage.trim().slice(0, 128)
      return { status: 'error', errorClass: errorType || message || 'error' }
    }
    return { status: 'ok' }
  }

  #outputTokens(attrs: Attributes): number | undefined {
    for (const k of this.config.outputTokenAttributes) {
      const n = numberAttr(attrs, k)
      if (n !== undefined && n >= 0) return n
    }
    return undefined
  }

  #recordGenericRequest(span: OtlpSpan, sink: SampleSink): void {
    const totalUs = span.durationNs / 1000
    let ttftUs: number | undefined
    for (const ev of span.events)
      if (this.config.firstTokenEvents.includes(ev.name)) {
        ttftUs = ev.offsetNs / 1000
        break
      }
    const outputTokens = this.#outputTokens(span.attributes)
    const tpotUs =
      ttftUs !== undefined && outputTokens !== undefined && outputTokens > 1
        ? (totalUs - ttftUs) / (outputTokens - 1)
        : undefined
    const labels = this.labels(span)
    sink.recordRequest({
      labels,
      ...this.#status(span),
      phasesUs: { total: totalUs },
      ...(ttftUs !== undefined ? { ttftUs } : {}),
      ...(tpotUs !== undefined ? { tpotUs } : {}),
      ...(outputTokens !== undefined ? { outputTokens } : {}),
    })
    this.#tokenSignals(span.attributes, labels, outputTokens, sink)
  }

  /** Token counts a request span carries, as live signals (tokens/s in and out). */
  #tokenSignals(
    attrs: OtlpSpan['attributes'],
    labels: SeriesLabels,
    outputTokens: number | undefined,
    sink: SampleSink,
  ): void {
    let inputTokens: number | undefined
    for (const k of INPUT_TOKEN_ATTRS) {
      const n = numberAttr(attrs, k)
      if (n !== undefined && n >= 0) {
        inputTokens = n
        break
      }
    }
    if (inputTokens === undefined && outputTokens === undefined) return
    sink.recordSignals?.(labels, {
      source: 'otlp',
      counters: {
        ...(inputTokens !== undefined ? { inputTokens } : {}),
        ...(outputTokens !== undefined ? { outputTokens } : {}),
      },
    })
  }

  #recordVllmRequest(span: OtlpSpan, sink: SampleSink): void {
    const a = span.attributes
    const e2eUs = secondsToUs(numberAttr(a, VLLM_ATTR.e2e)) ?? span.durationNs / 1000
    const queueUs = secondsToUs(numberAttr(a, VLLM_ATTR.queue))
    const prefillUs = secondsToUs(numberAttr(a, VLLM_ATTR.prefill))
    const decodeUs = secondsToUs(numberAttr(a, VLLM_ATTR.decode))
    const forwardUs = secondsToUs(numberAttr(a, VLLM_ATTR.forward))
    const ttftUs = secondsToUs(numberAttr(a, VLLM_ATTR.ttft))
    const outputTokens = this.#outputTokens(a)
    let tpotUs: number | undefined
    if (outputTokens !== undefined && outputTokens > 1) {
      if (decodeUs !== undefined) tpotUs = decodeUs / (outputTokens - 1)
      else if (ttftUs !== undefined) tpotUs = (e2eUs - ttftUs) / (outputTokens - 1)
    }
    const phasesUs: Partial<Record<Phase, DurationUs>> = { total: e2eUs }
    if (queueUs !== undefined) phasesUs.queue = queueUs
    if (prefillUs !== undefined) phasesUs.prefill = prefillUs
    if (decodeUs !== undefined) phasesUs.decode = decodeUs
    if (forwardUs !== undefined) phasesUs.kernel = forwardUs
    const labels = this.labels(span)
    sink.recordRequest({
      labels,
      ...this.#status(span),
      phasesUs,
      ...(ttftUs !== undefined ? { ttftUs } : {}),
      ...(tpotUs !== undefined ? { tpotUs } : {}),
      ...(outputTokens !== undefined ? { outputTokens } : {}),
    })
    this.#tokenSignals(a, labels, outputTokens, sink)
  }

  /** Compute sub-intervals of a Triton `compute` span, in µs, from its events. */
  #computePhases(compute: OtlpSpan): Partial<Record<Phase, DurationUs>> {
    const at = (name: string) => compute.events.find((e) => e.name === name)?.offsetNs
    const start = at(TRITON_EVENT.computeStart) ?? 0
    const inputEnd = at(TRITON_EVENT.computeInputEnd)
    const outputStart = at(TRITON_EVENT.computeOutputStart)
    const end = at(TRITON_EVENT.computeEnd) ?? compute.durationNs
    const p = this.config.tritonPhases
    const out: Partial<Record<Phase, DurationUs>> = {}
    const add = (phase: Phase, ns: number) => {
      out[phase] = (out[phase] ?? 0) + ns / 1000
    }
    if (inputEnd !== undefined) add(p.computeInput, inputEnd - start)
    if (inputEnd !== undefined && outputStart !== undefined) add(p.computeInfer, outputStart - inputEnd)
    if (outputStart !== undefined) add(p.computeOutput, end - outputStart)
    return out
  }

  #recordTritonRequest(span: OtlpSpan, compute: OtlpSpan | undefined, sink: SampleSink): void {
    const phasesUs: Partial<Record<Phase, DurationUs>> = { total: span.durationNs / 1000 }
    if (compute) {
      Object.assign(phasesUs, this.#computePhases(compute))
      const queueStart = span.events.find((e) => e.name === TRITON_EVENT.queueStart)?.offsetNs
      const computeStart = compute.events.find((e) => e.name === TRITON_EVENT.computeStart)?.offsetNs ?? 0
      if (queueStart !== undefined) {
        // Across spans: absolute times (float ns since the epoch, good to ~0.25 µs).
        const queueNs = compute.startTimeUnixNano + computeStart - (span.startTimeUnixNano + queueStart)
        phasesUs.queue = queueNs / 1000
      }
    }
    sink.recordRequest({ labels: this.labels(span), ...this.#status(span), phasesUs })
  }

  #recordComputeAlone(compute: OtlpSpan, sink: SampleSink): void {
    const labels = this.labels(compute)
    for (const [phase, us] of Object.entries(this.#computePhases(compute)))
      sink.recordLatency(labels, phase as Phase, us)
  }

  #isTritonCompute(span: OtlpSpan): boolean {
    return (
      span.name === TRITON_COMPUTE_SPAN_NAME &&
      span.events.some((e) => e.name === TRITON_EVENT.computeStart || e.name === TRITON_EVENT.computeEnd)
    )
  }

  #keepPending(span: OtlpSpan, sink: SampleSink): void {
    const key = span.traceId + span.parentSpanId
    this.#pendingCompute.set(key, { span })
    while (this.#pendingCompute.size > this.config.maxPendingComputeSpans) {
      const oldest = this.#pendingCompute.keys().next().value
      if (oldest === undefined) break
      const p = this.#pendingCompute.get(oldest)
      this.#pendingCompute.delete(oldest)
      if (p) this.#recordComputeAlone(p.span, sink)
    }
  }

  map(spans: readonly OtlpSpan[], sink: SampleSink): MapOutcome {
    this.#refused = {}
    this.#refusedCount = 0
    this.#sink = sink
    const c = this.config
    // Triton: index this batch's compute spans by (trace, parent) so request spans find theirs.
    let computeByParent: Map<string, OtlpSpan> | undefined
    if (c.triton)
      for (const s of spans)
        if (this.#isTritonCompute(s) && s.attributes[c.phaseAttribute] === undefined)
          (computeByParent ??= new Map()).set(s.traceId + s.parentSpanId, s)
    const usedCompute = new Set<string>()

    for (const span of spans) {
      const a = span.attributes
      if (a[c.recordedAttribute] === true) continue
      if (this.#ignored.has(span.name)) continue
      const phase = a[c.phaseAttribute]
      if (phase !== undefined) {
        this.#byPhase(span, typeof phase === 'string' ? phase : '', sink)
        continue
      }
      const named = c.spanNamePhases[span.name]
      if (named !== undefined) {
        this.#byPhase(span, named, sink)
        continue
      }
      if (c.vllm && (span.name === VLLM_REQUEST_SPAN_NAME || a[VLLM_ATTR.e2e] !== undefined)) {
        if (span.durationNs < 0) this.#refuse('negative_duration')
        else this.#recordVllmRequest(span, sink)
        continue
      }
      if (c.triton && a[TRITON_ATTR_MODEL] !== undefined) {
        if (span.durationNs < 0) {
          this.#refuse('negative_duration')
          continue
        }
        const key = span.traceId + span.spanId
        let compute = computeByParent?.get(key)
        if (compute) usedCompute.add(key)
        else {
          compute = this.#pendingCompute.get(key)?.span
          this.#pendingCompute.delete(key)
        }
        this.#recordTritonRequest(span, compute, sink)
        continue
      }
      if (c.triton && this.#isTritonCompute(span)) {
        if (span.durationNs < 0) this.#refuse('negative_duration')
        continue // recorded with its request span (below, if it is not in this batch)
      }
      if (c.serverRootSpansAreRequests && span.kind === SPAN_KIND_SERVER && span.parentSpanId === '') {
        this.#byPhase(span, 'total', sink)
        continue
      }
      this.#refuse('unknown_phase')
    }
    if (computeByParent)
      for (const [key, s] of computeByParent)
        if (!usedCompute.has(key) && s.durationNs >= 0) this.#keepPending(s, sink)

    const outcome = {
      accepted: spans.length - this.#refusedCount,
      refused: this.#refusedCount,
      refusedBy: this.#refused,
    }
    this.#sink = undefined
    return outcome
  }

  #byPhase(span: OtlpSpan, phase: string, sink: SampleSink): void {
    if (!isMetric(phase)) {
      this.#refuse('unknown_phase')
      return
    }
    if (!(span.durationNs >= 0)) {
      this.#refuse('negative_duration')
      return
    }
    if (phase === 'total') this.#recordGenericRequest(span, sink)
    else sink.recordLatency(this.labels(span), phase, span.durationNs / 1000)
  }

  flushPending(sink: SampleSink): void {
    for (const p of this.#pendingCompute.values()) this.#recordComputeAlone(p.span, sink)
    this.#pendingCompute.clear()
  }
}

/**
 * Makes a {@link SpanMapper}. Per span, in order: spans marked recorded by the SDK and ignored names are
 * skipped; the `tailguard.phase` attribute wins; then the span-name table; then vLLM's `llm_request`
 * span; then Triton's request and compute spans; then root SERVER spans as whole requests; anything else
 * is refused as `unknown_phase`.
 *
 * @example
 * ```ts
 * const mapper = createSpanMapper()
 * mapper.map(spans, recorder) // { accepted: 98, refused: 2, refusedBy: { unknown_phase: 2 } }
 * ```
 */
export function createSpanMapper(options: OtlpMappingOptions = {}): SpanMapper {
  return new SpanMapperImpl(resolveMappingConfig(options))
}
