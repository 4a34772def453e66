import type { Metric, SignalCounter, SignalGauge } from '../../../collector/index.js'

/** The model servers tailguard reads, and DCGM exporter. @example SCRAPE_KINDS.includes('vllm') // true */
export const SCRAPE_KINDS = ['vllm', 'triton', 'tgi', 'sglang', 'dcgm'] as const
export type ScrapeKind = (typeof SCRAPE_KINDS)[number]
/** The servers whose request signals an adapter maps (DCGM exporter feeds the GPU side instead). */
export type ServerKind = Exclude<ScrapeKind, 'dcgm'>

/** Where a scraped counter goes: a signal counter, the request counts, or Triton's batch arithmetic. */
export type CounterTarget = SignalCounter | 'ok' | 'error' | 'inferences' | 'executions'
/** The unit a server exports a duration in. */
export type DurationUnit = 's' | 'ms' | 'us'

/** Milliseconds per unit. @example MS_PER_UNIT.us // 0.001 */
export const MS_PER_UNIT: Readonly<Record<DurationUnit, number>> = { s: 1000, ms: 1, us: 0.001 }

/**
 * How one server's `/metrics` maps to tailguard: family names (without `_bucket`/`_sum`/`_count`) to gauges,
 * counters and latency metrics. Where a server renamed a family, both names are listed and `prefer` picks the
 * newer when a server exports both (vLLM during its deprecation window).
 */
export interface AdapterSpec {
  readonly kind: ServerKind
  /** Name prefixes this server owns: a family under them that the adapter does not know is a warning. */
  readonly namespace: readonly string[]
  /** The label that names the model (vLLM/SGLang `model_name`, Triton `model`); TGI has none. */
  readonly modelLabel: string | null
  readonly versionLabel: string | null
  readonly gauges: Readonly<
    Record<string, { readonly gauge: SignalGauge; readonly agg: 'sum' | 'mean'; readonly prefer?: number }>
  >
  readonly counters: Readonly<Record<string, { readonly to: CounterTarget; readonly prefer?: number }>>
  /** Bucket histograms of a latency, imported as buckets. */
  readonly histograms: Readonly<
    Record<string, { readonly metric: Metric; readonly unit: DurationUnit; readonly prefer?: number }>
  >
  /** Histograms of which only the `_sum` is used, as a counter (TGI's token counts per request). */
  readonly histogramSums?: Readonly<Record<string, CounterTarget>>
  /** Summaries whose quantiles are kept with the metric's histogram (Triton's `*_summary_us`). */
  readonly summaries?: Readonly<Record<string, { readonly metric: Metric; readonly unit: DurationUnit }>>
  /**
   * Cumulative duration counters (Triton's `*_duration_us`): per interval, their increase over the increase of
   * the request counters named in `countOf` is the phase's mean (a count-and-sum histogram, precision `mean`).
   */
  readonly durationCounters?: Readonly<
    Record<
      string,
      { readonly metric: Metric; readonly unit: DurationUnit; readonly countOf: readonly CounterTarget[] }
    >
  >
  /** Families known and deliberately not used (no warning). */
  readonly known: readonly string[]
}

const VLLM: AdapterSpec = {
  kind: 'vllm',
  namespace: ['vllm:'],
  modelLabel: 'model_name',
  versionLabel: null,
  gauges: {
    'vllm:num_requests_running': { gauge: 'running', agg: 'sum' },
    'vllm:num_requests_waiting': { gauge: 'waiting', agg: 'sum' },
    // Renamed in vLLM 0.10/0.11 (V1 engine); the old name is gone by default after its deprecation window.
    'vllm:gpu_cache_usage_perc': { gauge: 'kvCacheUsage', agg: 'mean', prefer: 0 },
    'vllm:kv_cache_usage_perc': { gauge: 'kvCacheUsage', agg: 'mean', prefer: 1 },
  },
  counters: {
    'vllm:prompt_tokens_total': { to: 'inputTokens' },
    'vllm:generation_tokens_total': { to: 'outputTokens' },
    'vllm:num_preemptions_total': { to: 'preemptions' },
    'vllm:gpu_prefix_cache_queries_total': { to: 'prefixCacheQueries', prefer: 0 },
    'vllm:gpu_prefix_cache_hits_total': { to: 'prefixCacheHits', prefer: 0 },
    'vllm:prefix_cache_queries_total': { to: 'prefixCacheQueries', prefer: 1 },
    'vllm:prefix_cache_hits_total': { to: 'prefixCacheHits', prefer: 1 },
    'vllm:request_success_total': { to: 'ok' },
  },
  histograms: {
    'vllm:time_to_first_token_seconds': { metric: 'ttft', unit: 's' },
    // `time_per_output_token_seconds` was renamed `inter_token_latency_seconds` (vLLM 0.11).
    'vllm:time_per_output_token_seconds': { metric: 'tpot', unit: 's', prefer: 0 },
    'vllm:inter_token_latency_seconds': { metric: 'tpot', unit: 's', prefer: 1 },
    'vllm:e2e_request_latency_seconds': { metric: 'total', unit: 's' },
    'vllm:request_queue_time_seconds': { metric: 'queue', unit: 's' },
    'vllm:request_prefill_time_seconds': { metric: 'prefill', unit: 's' },
    'vllm:request_decode_time_seconds': { metric: 'decode', unit: 's' },
  },
  known: [
    'vllm:num_requests_swapped',
    'vllm:num_requests_waiting_by_reason',
    'vllm:cpu_cache_usage_perc',
    'vllm:cpu_prefix_cache_hit_rate',
    'vllm:gpu_prefix_cache_hit_rate',
    'vllm:cache_config_info',
    'vllm:lora_requests_info',
    'vllm:engine_sleep_state',
    'vllm:avg_prompt_throughput_toks_per_s',
    'vllm:avg_generation_throughput_toks_per_s',
    'vllm:request_prompt_tokens',
    'vllm:request_generation_tokens',
    'vllm:request_params_n',
    'vllm:request_params_best_of',
    'vllm:request_params_max_tokens',
    'vllm:request_max_num_generation_tokens',
    'vllm:request_prefill_kv_computed_tokens',
    'vllm:iteration_tokens_total',
    'vllm:request_inference_time_seconds',
    'vllm:request_time_per_output_token_seconds',
    'vllm:external_prefix_cache_queries_total',
    'vllm:external_prefix_cache_hits_total',
    'vllm:mm_cache_queries_total',
    'vllm:mm_cache_hits_total',
    'vllm:prompt_tokens_by_source_total',
    'vllm:prompt_tokens_cached_total',
    'vllm:prompt_tokens_recomputed_total',
    'vllm:spec_decode_num_drafts_total',
    'vllm:spec_decode_num_draft_tokens_total',
    'vllm:spec_decode_num_accepted_tokens_total',
    'vllm:spec_decode_num_accepted_tokens_per_pos_total',
    'vllm:num_gpu_blocks',
  ],
}

const TRITON_COUNT: readonly CounterTarget[] = ['ok', 'error']
const TRITON: AdapterSpec = {
  kind: 'triton',
  namespace: ['nv_'],
  modelLabel: 'model',
  versionLabel: 'version',
  gauges: {
    nv_inference_pending_request_count: { gauge: 'queued', agg: 'sum' },
  },
  counters: {
    nv_inference_request_success: { to: 'ok' },
    nv_inference_request_failure: { to: 'error' },
    nv_inference_count: { to: 'inferences' },
    nv_inference_exec_count: { to: 'executions' },
  },
  histograms: {
    // Decoupled models (LLMs streaming through Triton): time to the first response.
    nv_inference_first_response_histogram_ms: { metric: 'ttft', unit: 'ms' },
    // Per-request latency histograms (triton-inference-server/core#474), when a server exports them.
    nv_inference_request_duration_histogram_us: { metric: 'total', unit: 'us' },
    nv_inference_queue_duration_histogram_us: { metric: 'queue', unit: 'us' },
    nv_inference_compute_input_duration_histogram_us: { metric: 'h2d', unit: 'us' },
    nv_inference_compute_infer_duration_histogram_us: { metric: 'kernel', unit: 'us' },
    nv_inference_compute_output_duration_histogram_us: { metric: 'd2h', unit: 'us' },
  },
  summaries: {
    nv_inference_request_summary_us: { metric: 'total', unit: 'us' },
    nv_inference_queue_summary_us: { metric: 'queue', unit: 'us' },
    nv_inference_compute_input_summary_us: { metric: 'h2d', unit: 'us' },
    nv_inference_compute_infer_summary_us: { metric: 'kernel', unit: 'us' },
    nv_inference_compute_output_summary_us: { metric: 'd2h', unit: 'us' },
  },
  // Triton's phases as the OTLP mapping names them (computeInput → h2d, computeInfer → kernel, computeOutput → d2h).
  durationCounters: {
    nv_inference_request_duration_us: { metric: 'total', unit: 'us', countOf: TRITON_COUNT },
    nv_inference_queue_duration_us: { metric: 'queue', unit: 'us', countOf: TRITON_COUNT },
    nv_inference_compute_input_duration_us: { metric: 'h2d', unit: 'us', countOf: ['ok'] },
    nv_inference_compute_infer_duration_us: { metric: 'kernel', unit: 'us', countOf: ['ok'] },
    nv_inference_compute_output_duration_us: { metric: 'd2h', unit: 'us', countOf: ['ok'] },
  },
  known: [
    'nv_energy_consumption',
    'nv_gpu_utilization',
    'nv_gpu_memory_total_bytes',
    'nv_gpu_memory_used_bytes',
    'nv_gpu_power_usage',
    'nv_gpu_power_limit',
    'nv_cpu_utilization',
    'nv_cpu_memory_total_bytes',
    'nv_cpu_memory_used_bytes',
    'nv_cache_util',
    'nv_cache_num_entries',
    'nv_cache_num_hits',
    'nv_cache_num_misses',
    'nv_cache_num_lookups',
    'nv_cache_num_evictions',
    'nv_cache_lookup_duration',
    'nv_cache_insertion_duration',
    'nv_inference_load_ratio',
    'nv_model_load_duration_secs',
    'nv_cache_hit_duration_per_model',
    'nv_cache_miss_duration_per_model',
    'nv_cache_num_hits_per_model',
    'nv_cache_num_misses_per_model',
  ],
}

const TGI: AdapterSpec = {
  kind: 'tgi',
  namespace: ['tgi_'],
  modelLabel: null,
  versionLabel: null,
  gauges: {
    tgi_queue_size: { gauge: 'waiting', agg: 'sum' },
    tgi_batch_current_size: { gauge: 'running', agg: 'sum' },
  },
  counters: {
    tgi_request_success: { to: 'ok' },
    tgi_request_failure: { to: 'error' },
    tgi_batch_inference_count: { to: 'batches' },
  },
  histograms: {
    tgi_request_duration: { metric: 'total', unit: 's' },
    tgi_request_queue_duration: { metric: 'queue', unit: 's' },
    tgi_request_validation_duration: { metric: 'preprocess', unit: 's' },
    tgi_request_mean_time_per_token_duration: { metric: 'tpot', unit: 's' },
  },
  histogramSums: {
    tgi_request_input_length: 'inputTokens',
    tgi_request_generated_tokens: 'outputTokens',
  },
  known: [
    'tgi_request_count',
    'tgi_request_inference_duration',
    'tgi_request_max_new_tokens',
    'tgi_request_skipped_tokens',
    'tgi_batch_current_max_tokens',
    'tgi_batch_next_size',
    'tgi_batch_concat',
    'tgi_batch_concat_duration',
    'tgi_batch_inference_success',
    'tgi_batch_inference_duration',
    'tgi_batch_forward_duration',
    'tgi_batch_decode_duration',
    'tgi_batch_filter_duration',
  ],
}

const SGLANG: AdapterSpec = {
  kind: 'sglang',
  namespace: ['sglang:'],
  modelLabel: 'model_name',
  versionLabel: null,
  gauges: {
    'sglang:num_running_reqs': { gauge: 'running', agg: 'sum' },
    'sglang:num_queue_reqs': { gauge: 'waiting', agg: 'sum' },
    'sglang:token_usage': { gauge: 'kvCacheUsage', agg: 'mean' },
  },
  counters: {
    'sglang:prompt_tokens_total': { to: 'inputTokens' },
    'sglang:generation_tokens_total': { to: 'outputTokens' },
    'sglang:cached_tokens_total': { to: 'prefixCacheHits' },
    'sglang:num_requests_total': { to: 'ok' },
  },
  histograms: {
    'sglang:time_to_first_token_seconds': { metric: 'ttft', unit: 's' },
    'sglang:time_per_output_token_seconds': { metric: 'tpot', unit: 's', prefer: 0 },
    'sglang:inter_token_latency_seconds': { metric: 'tpot', unit: 's', prefer: 1 },
    'sglang:e2e_request_latency_seconds': { metric: 'total', unit: 's' },
    'sglang:queue_time_seconds': { metric: 'queue', unit: 's' },
  },
  known: [
    'sglang:http_requests_active',
    'sglang:num_used_tokens',
    'sglang:cache_hit_rate',
    'sglang:max_total_num_tokens',
    'sglang:gen_throughput',
    'sglang:utilization',
    'sglang:is_cuda_graph',
    'sglang:num_retracted_reqs',
    'sglang:spec_accept_length',
    'sglang:spec_accept_rate',
    'sglang:engine_startup_time',
    'sglang:engine_load_weights_time',
    'sglang:prompt_tokens_histogram',
    'sglang:generation_tokens_histogram',
    'sglang:num_grammar_queue_reqs',
    'sglang:num_prefill_prealloc_queue_reqs',
    'sglang:num_prefill_inflight_queue_reqs',
    'sglang:num_decode_prealloc_queue_reqs',
    'sglang:num_decode_transfer_queue_reqs',
  ],
}

/** Every server adapter, by kind. @example ADAPTERS.vllm.gauges['vllm:kv_cache_usage_perc'] // { gauge: 'kvCacheUsage', agg: 'mean', prefer: 1 } */
export const ADAPTERS: Readonly<Record<ServerKind, AdapterSpec>> = {
  vllm: VLLM,
  triton: TRITON,
  tgi: TGI,
  sglang: SGLANG,
}

/** The name prefix that tells each kind apart when detecting it. @example KIND_PREFIXES[0] // ['vllm', 'vllm:'] */
export const KIND_PREFIXES: ReadonlyArray<readonly [ScrapeKind, string]> = [
  ['vllm', 'vllm:'],
  ['triton', 'nv_inference_'],
  ['tgi', 'tgi_'],
  ['sglang', 'sglang:'],
  ['dcgm', 'DCGM_FI_'],
]
