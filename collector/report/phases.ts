/**
 * The phase model: where the time of one inference request goes.
 *
 * `total` is the whole request as the server saw it. The LLM phases (`prefill`, `decode`) sit beside the
 * classic ones; a request records only the phases it went through. `routing` is the time a gateway or router
 * spends choosing a replica before the request reaches it; `retrieval` is feature lookup or RAG retrieval
 * before the model runs, so an end-to-end latency budget can be accounted for phase by phase.
 *
 * @example
 * ```ts
 * import { PHASES, isPhase } from '../collector/index.js'
 * isPhase('kernel') // true
 * ```
 */
export const PHASES = [
  'routing',
  'network',
  'serialization',
  'queue',
  'retrieval',
  'preprocess',
  'h2d',
  'kernel',
  'd2h',
  'postprocess',
  'prefill',
  'decode',
  'total',
] as const

/** One phase of a request. */
export type Phase = (typeof PHASES)[number]

/**
 * Per-request latency metrics that are not phases of the request but are kept the same way (HDR, µs):
 * time to first token and time per output token, for LLM servers.
 */
export const TOKEN_METRICS = ['ttft', 'tpot'] as const
export type TokenMetric = (typeof TOKEN_METRICS)[number]

/** Everything kept as a latency histogram: the phases plus the token metrics. */
export const METRICS = [...PHASES, ...TOKEN_METRICS] as const
export type Metric = Phase | TokenMetric

const PHASE_SET: ReadonlySet<string> = new Set(PHASES)
const METRIC_SET: ReadonlySet<string> = new Set(METRICS)

/** True when `name` is one of {@link PHASES}. @example isPhase('queue') // true */
export const isPhase = (name: string): name is Phase => PHASE_SET.has(name)

/** True when `name` is a phase or a token metric. @example isMetric('ttft') // true */
export const isMetric = (name: string): name is Metric => METRIC_SET.has(name)

/** The outcome of one request. `shed` means admission control refused it. */
export const REQUEST_STATUSES = ['ok', 'error', 'shed'] as const
export type RequestStatus = (typeof REQUEST_STATUSES)[number]

/** The labels that identify one series. Missing values are the empty string, never undefined. */
export interface SeriesLabels {
  readonly service: string
  readonly model: string
  readonly version: string
  readonly replica: string
  readonly node: string
}

export const LABEL_NAMES = ['service', 'model', 'version', 'replica', 'node'] as const
export type LabelName = (typeof LABEL_NAMES)[number]

/**
 * A stable key for a label set, used for maps. Label values cannot contain NUL (the report schema forbids it).
 *
 * @example seriesKey({ service: 's', model: 'm', version: '1', replica: 'r0', node: 'n' }) // 's\u0000m\u00001\u0000r0\u0000n'
 */
export const seriesKey = (l: SeriesLabels): string =>
  `${l.service}\u0000${l.model}\u0000${l.version}\u0000${l.replica}\u0000${l.node}`
