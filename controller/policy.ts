/**
 * The policy interface (STYLE.md section 11). A policy is a step function: every control interval it sees a
 * {@link FleetObservation} (what the collector knows) and returns new state and {@link Action}s, each with a
 * reason. The simulator (controller/sim) and the live controller call the same policies with different clocks.
 */

/** Milliseconds since the epoch (live) or since the start of a simulation. */
export type EpochMs = number

/** Latency percentiles of one phase over the last control interval, in ms (null when nothing completed). */
export interface PhasePercentilesMs {
  readonly p50: number | null
  readonly p99: number | null
  readonly count: number
}

/**
 * Continuous-batching (LLM) signals over the interval, where the fleet reports them (vLLM/TGI scrape, the
 * proxy, the simulator). All fleet-wide.
 */
export interface LlmSignals {
  /** Sequences running on ready replicas (mean over the interval). */
  readonly running: number
  /** Prompt tokens admitted and output tokens generated in the interval. */
  readonly inputTokens: number
  readonly outputTokens: number
  /** Mean KV-cache occupancy of ready replicas, 0..1. */
  readonly kvUsage: number
  /** Sequences preempted (evicted from the KV cache) in the interval. */
  readonly preemptions: number
}

/**
 * An LLM fleet's signals as a proxy in front of it sees them, for servers that report none of their own: the
 * requests in flight stand for the running sequences, the output tokens come from the responses (OpenAI
 * `usage`, or counted per streamed event); prompt tokens, KV use and preemptions are unknown (0).
 *
 * @example proxyLlmSignals(12.5, 4200).running // 12.5
 */
export function proxyLlmSignals(inFlightMean: number, outputTokens: number): LlmSignals {
  return { running: inFlightMean, inputTokens: 0, outputTokens, kvUsage: 0, preemptions: 0 }
}

/** What the collector knows at one control interval. */
export interface FleetObservation {
  /** How old the observation is when the policy sees it, ms (absent or 0: fresh). Optional. */
  readonly ageMs?: number
  /** Mean service time (batch, or decode step for LLMs) over the interval, ms. Optional. */
  readonly serviceMeanMs?: number
  /** LLM signals (running sequences, tokens, KV occupancy, preemptions). Optional. */
  readonly llm?: LlmSignals
  /** Length of the interval this observation covers, ms. */
  readonly intervalMs: number
  /** Arrival rate (req/s) averaged over short windows, keyed by window length in seconds (e.g. 6, 10, 60). */
  readonly arrivalRps: Readonly<Record<number, number>>
  /**
   * Per-phase latency percentiles over the interval: `queue` (wait before service), `service` (batch or
   * generation time), `e2e`, and for LLMs `ttft` and `tpot`.
   */
  readonly latencyMs: Readonly<Record<'queue' | 'service' | 'e2e' | 'ttft' | 'tpot', PhasePercentilesMs>>
  /** Requests waiting in queues now, total and per priority class. */
  readonly queueDepth: number
  readonly queueDepthByClass: readonly number[]
  /** Requests being served now. */
  readonly inFlight: number
  /**
   * Requests in flight at the replicas over the interval, time-weighted mean summed over replicas (a proxy in
   * front of them counts a request from dispatch to its response, so a server's own queue is in it). With the
   * completions, the mean time a request spends there (Little's law): a server's response time when it reports
   * no service phase. Optional.
   */
  readonly inFlightMean?: number
  /**
   * Replicas with at least one request in flight, time-weighted mean over the interval (the proxy counts its
   * upstreams that are). With {@link inFlightMean}, the batch a busy replica shares. Optional.
   */
  readonly busyReplicasMean?: number
  /** Average in-system concurrency (queued + in service) over short windows, keyed by window seconds. */
  readonly concurrency: Readonly<Record<number, number>>
  /** Mean and max batch size dispatched in the interval (0 when none). */
  readonly batchSize: { readonly mean: number; readonly max: number }
  /** Error budget: fraction remaining of the budget so far (1 = untouched, < 0 = overspent), and burn rate over the interval. */
  readonly errorBudget: { readonly remaining: number; readonly burnRate: number }
  /** Fraction of ready-replica time spent serving over the interval, 0..1. */
  readonly gpuUtilization: number
  readonly replicas: { readonly ready: number; readonly starting: number }
  /** Requests completed and shed in the interval. */
  readonly completed: number
  readonly shed: number
  /** Of {@link completed}, those that ended in an error (absent: none counted). Optional. */
  readonly errors?: number
}

/** Setpoints the controller can change. */
export interface Setpoints {
  /** Dynamic batcher: how long the oldest request may wait for a batch to fill, ms. */
  readonly batchWindowMs: number
  readonly maxBatch: number
  /**
   * Admission per priority class (index 0 = highest priority): queue cap and in-system cap, and optionally how
   * long a request may wait in the queue before it is dropped (deadline-aware dropping).
   */
  readonly admission: ReadonlyArray<{
    readonly maxQueue: number
    readonly maxConcurrency: number
    readonly queueTimeoutMs?: number
  }>
  readonly desiredReplicas: number
}

/** A change of setpoints, with the reason it was made. */
export type Action =
  | { readonly kind: 'scale'; readonly desiredReplicas: number; readonly reason: string }
  | {
      readonly kind: 'batching'
      readonly windowMs: number
      readonly maxBatch: number
      readonly reason: string
    }
  | {
      readonly kind: 'admission'
      readonly priorityClass: number
      readonly maxQueue: number
      readonly maxConcurrency: number
      /** Drop a request of this class that has waited this long in the queue. Optional (absent: no timeout). */
      readonly queueTimeoutMs?: number
      readonly reason: string
    }

/** A controller policy: pure step function over its own state. */
export interface Policy<S = unknown> {
  readonly name: string
  /** Initial state, given the setpoints the fleet starts with. */
  init(initial: Setpoints): S
  step(state: S, obs: FleetObservation, now: EpochMs): { state: S; actions: readonly Action[] }
}

/**
 * Applies actions to setpoints (the simulator and actuators share this).
 *
 * @example applyActions(sp, [{ kind: 'scale', desiredReplicas: 4, reason: 'load' }]).desiredReplicas // 4
 */
export function applyActions(setpoints: Setpoints, actions: readonly Action[]): Setpoints {
  let out = setpoints
  for (const a of actions) {
    if (a.kind === 'scale') out = { ...out, desiredReplicas: Math.max(0, Math.round(a.desiredReplicas)) }
    else if (a.kind === 'batching')
      out = { ...out, batchWindowMs: Math.max(0, a.windowMs), maxBatch: Math.max(1, Math.round(a.maxBatch)) }
    else {
      const admission = out.admission.slice()
      admission[a.priorityClass] = {
        maxQueue: a.maxQueue,
        maxConcurrency: a.maxConcurrency,
        ...(a.queueTimeoutMs !== undefined ? { queueTimeoutMs: a.queueTimeoutMs } : {}),
      }
      out = { ...out, admission }
    }
  }
  return out
}
