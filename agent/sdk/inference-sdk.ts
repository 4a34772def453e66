import { SpanStatusCode, context, trace } from '@opentelemetry/api'
import type { Span, Tracer } from '@opentelemetry/api'
import { isPhase } from '../../collector/index.js'
import type { Phase, RequestStatus, SeriesLabels } from '../../collector/index.js'
import type { DurationUs, SampleSink } from '../types.js'

/** Attributes the SDK puts on its spans (the receiver's default mapping reads the same names). @example span.attributes[SDK_ATTR.phase] // 'queue' */
export const SDK_ATTR = {
  phase: 'tailguard.phase',
  status: 'tailguard.status',
  /** Set on every SDK span: the agent's receiver skips them, as the SDK has recorded them already. */
  recorded: 'tailguard.recorded',
  model: 'gen_ai.request.model',
  version: 'model.version',
  outputTokens: 'gen_ai.usage.output_tokens',
  inputTokens: 'gen_ai.usage.input_tokens',
  errorType: 'error.type',
} as const
/** Event the SDK adds to the request span at the first output token. @example span.events[0].name === SDK_FIRST_TOKEN_EVENT */
export const SDK_FIRST_TOKEN_EVENT = 'tailguard.first_token'

/**
 * Options of {@link createInferenceSdk}.
 *
 * @example
 * ```ts
 * const sdk = createInferenceSdk({ sink: recorder, labels: { service: 'chat', model: 'llama-3-8b', version: '3', replica: 'r0', node: 'n1' } })
 * ```
 */
export interface InferenceSdkOptions {
  /** Where observations go (the agent's recorder, or anything implementing SampleSink). */
  readonly sink: SampleSink
  /** Labels of every request; `startRequest` may override some per request. */
  readonly labels: SeriesLabels
  /** Tracer for the spans; default `trace.getTracer('tailguard')` (a no-op until an OTel SDK is registered). */
  readonly tracer?: Tracer
  /** Monotonic clock in ms (default `performance.now`). Tests inject a fake one. */
  readonly clock?: () => number
  /** Epoch ms at clock reading 0, used for span timestamps (default `Date.now() - clock()` at creation). */
  readonly timeOriginMs?: number
  /** Name of request spans (default `inference`). */
  readonly spanName?: string
}

/** How a request ended. @example req.end({ status: 'shed', errorClass: 'queue_full' }) */
export interface RequestEnd {
  readonly status?: RequestStatus
  /** Error class (`timeout`, `oom`, …) when `status` is `error`; the shed reason when `shed`. */
  readonly errorClass?: string
  readonly outputTokens?: number
  /** Prompt tokens of the request (a live signal: tokens/s in). */
  readonly inputTokens?: number
}

/**
 * One request in flight. Phases may repeat (their times add up) and may overlap. Every method is cheap,
 * never throws, and does nothing after {@link InferenceRequest.end}.
 *
 * @example
 * ```ts
 * const req = sdk.startRequest({ model: 'llama-3-8b' })
 * req.startPhase('queue'); await slot(); req.endPhase('queue')
 * const out = await req.time('prefill', () => model.prefill(prompt))
 * req.firstToken()
 * req.end({ status: 'ok', outputTokens: 42 })
 * ```
 */
export interface InferenceRequest {
  startPhase(phase: Phase): void
  endPhase(phase: Phase): void
  /** Times `fn` as `phase`; a promise is timed until it settles (and returned as is). */
  time<T>(phase: Phase, fn: () => T): T
  /** Marks the first output token now (TTFT); later calls are ignored. */
  firstToken(): void
  /** Ends the request: open phases end now, the sample goes to the sink and the spans end. Idempotent. */
  end(result?: RequestEnd): void
  /** The request's OpenTelemetry span (non-recording when no OTel SDK is registered). */
  readonly span: Span
}

/**
 * The in-process SDK.
 *
 * @example
 * ```ts
 * const req = sdk.startRequest()
 * req.end({ status: 'error', errorClass: 'timeout' })
 * ```
 */
export interface InferenceSdk {
  startRequest(overrides?: Partial<SeriesLabels>): InferenceRequest
}

interface OpenPhase {
  readonly startMs: number
  readonly span: Span
}

class InferenceRequestImpl implements InferenceRequest {
  readonly span: Span
  readonly #sdk: InferenceSdkImpl
  readonly #labels: SeriesLabels
  readonly #startMs: number
  readonly #phasesUs: Partial<Record<Phase, DurationUs>> = {}
  readonly #open = new Map<Phase, OpenPhase>()
  #firstTokenMs: number | undefined
  #ended = false

  constructor(sdk: InferenceSdkImpl, labels: SeriesLabels) {
    this.#sdk = sdk
    this.#labels = labels
    this.#startMs = sdk.clock()
    this.span = sdk.tracer.startSpan(sdk.spanName, {
      startTime: sdk.epochMs(this.#startMs),
      attributes: {
        [SDK_ATTR.phase]: 'total',
        [SDK_ATTR.recorded]: true,
        [SDK_ATTR.model]: labels.model,
        [SDK_ATTR.version]: labels.version,
      },
    })
  }

  startPhase(phase: Phase): void {
    if (this.#ended) return
    if (!isPhase(phase)) {
      this.#sdk.sink.drop('unknown_phase')
      return
    }
    if (this.#open.has(phase)) return
    const startMs = this.#sdk.clock()
    const span = this.#sdk.tracer.startSpan(
      phase,
      {
        startTime: this.#sdk.epochMs(startMs),
        attributes: { [SDK_ATTR.phase]: phase, [SDK_ATTR.recorded]: true },
      },
      trace.setSpan(context.active(), this.span),
    )
    this.#open.set(phase, { startMs, span })
  }

  endPhase(phase: Phase): void {
    if (this.#ended) return
    this.#close(phase, this.#sdk.clock())
  }

  #close(phase: Phase, nowMs: number): void {
    const open = this.#open.get(phase)
    if (!open) return
    this.#open.delete(phase)
    this.#phasesUs[phase] = (this.#phasesUs[phase] ?? 0) + (nowMs - open.startMs) * 1000
    open.span.end(this.#sdk.epochMs(nowMs))
  }

  time<T>(phase: Phase, fn: () => T): T {
    this.startPhase(phase)
    let result: T
    try {
      result = fn()
    } catch (err) {
      this.endPhase(phase)
      throw err
    }
    if (result instanceof Promise) {
      const done = () => this.endPhase(phase)
      result.then(done, done)
      return result
    }
    this.endPhase(phase)
    return result
  }

  firstToken(): void {
    if (this.#ended || this.#firstTokenMs !== undefined) return
    this.#firstTokenMs = this.#sdk.clock()
    this.span.addEvent(SDK_FIRST_TOKEN_EVENT, this.#sdk.epochMs(this.#firstTokenMs))
  }

  end(result: RequestEnd = {}): void {
    if (this.#ended) return
    const nowMs = this.#sdk.clock()
    for (const phase of [...this.#open.keys()]) this.#close(phase, nowMs)
    this.#ended = true
    const status = result.status ?? 'ok'
    const phasesUs = this.#phasesUs
    if (phasesUs.total === undefined) phasesUs.total = (nowMs - this.#startMs) * 1000
    const ttftUs = this.#firstTokenMs === undefined ? undefined : (this.#firstTokenMs - this.#startMs) * 1000
    const n = result.outputTokens
    const tpotUs =
      this.#firstTokenMs !== undefined && n !== undefined && n > 1
        ? ((nowMs - this.#firstTokenMs) * 1000) / (n - 1)
        : undefined
    this.#sdk.sink.recordRequest({
      labels: this.#labels,
      status,
      ...(status !== 'ok' && result.errorClass ? { errorClass: result.errorClass } : {}),
      phasesUs,
      ...(ttftUs !== undefined ? { ttftUs } : {}),
      ...(tpotUs !== undefined ? { tpotUs } : {}),
      ...(n !== undefined ? { outputTokens: n } : {}),
    })
    const input = result.inputTokens
    if ((n !== undefined && n >= 0) || (input !== undefined && input >= 0))
      this.#sdk.sink.recordSignals?.(this.#labels, {
        source: 'sdk',
        counters: {
          ...(input !== undefined && input >= 0 ? { inputTokens: input } : {}),
          ...(n !== undefined && n >= 0 ? { outputTokens: n } : {}),
        },
      })
    const span = this.span
    span.setAttribute(SDK_ATTR.status, status)
    if (n !== undefined) span.setAttribute(SDK_ATTR.outputTokens, n)
    if (input !== undefined) span.setAttribute(SDK_ATTR.inputTokens, input)
    if (status !== 'ok') {
      if (result.errorClass) span.setAttribute(SDK_ATTR.errorType, result.errorClass)
      if (status === 'error')
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.errorClass ?? 'error' })
    }
    span.end(this.#sdk.epochMs(nowMs))
  }
}

class InferenceSdkImpl implements InferenceSdk {
  readonly sink: SampleSink
  readonly tracer: Tracer
  readonly clock: () => number
  readonly spanName: string
  readonly #labels: SeriesLabels
  readonly #originMs: number

  constructor(options: InferenceSdkOptions) {
    this.sink = options.sink
    this.tracer = options.tracer ?? trace.getTracer('tailguard')
    this.clock = options.clock ?? (() => performance.now())
    this.spanName = options.spanName ?? 'inference'
    this.#labels = { ...options.labels }
    this.#originMs = options.timeOriginMs ?? Date.now() - this.clock()
  }

  epochMs(clockMs: number): number {
    return this.#originMs + clockMs
  }

  startRequest(overrides?: Partial<SeriesLabels>): InferenceRequest {
    return new InferenceRequestImpl(this, overrides ? { ...this.#labels, ...overrides } : this.#labels)
  }
}

/**
 * Makes the in-process SDK for Node model servers. Each request records straight into the sink (no
 * network, no serialization) and also opens OpenTelemetry spans through `@opentelemetry/api` (a request
 * span with `tailguard.phase=total` and a child span per phase), so an app with an OTel SDK exports them
 * to its tracing backend too. The spans carry `tailguard.recorded=true`, which tailguard's receiver skips,
 * so exporting them to the agent as well does not count requests twice.
 *
 * @example
 * ```ts
 * const sdk = createInferenceSdk({ sink: recorder, labels })
 * const req = sdk.startRequest()
 * await req.time('queue', () => limiter.acquire())
 * await req.time('kernel', () => session.run(feeds))
 * req.end({ status: 'ok' })
 * ```
 */
export function createInferenceSdk(options: InferenceSdkOptions): InferenceSdk {
  return new InferenceSdkImpl(options)
}
