/**
 * tailguard's metric and attribute names, in one place (STYLE.md section 12). Phase latencies follow
 * OpenTelemetry's GenAI semantic conventions and are exported in seconds.
 */
export const METRIC_GEN_AI_SERVER_REQUEST_DURATION = 'gen_ai.server.request.duration' as const
export const METRIC_GEN_AI_SERVER_TTFT = 'gen_ai.server.time_to_first_token' as const
export const METRIC_GEN_AI_SERVER_TPOT = 'gen_ai.server.time_per_output_token' as const

/** Prometheus names (dots become underscores, unit suffix appended as Prometheus' OTel mapping does). */
export const PROM_SERVICE_LATENCY = 'tailguard_service_latency_seconds' as const
export const PROM_SERVICE_THROUGHPUT = 'tailguard_service_requests_per_second' as const
export const PROM_REPORTS_INGESTED = 'tailguard_collector_reports_total' as const
export const PROM_HTTP_REQUESTS = 'tailguard_collector_http_requests_total' as const
export const PROM_INGEST_DURATION = 'tailguard_collector_ingest_duration_seconds' as const

export const ATTR_PHASE = 'tailguard.phase' as const
export const ATTR_STATUS = 'tailguard.status' as const
export const ATTR_ERROR_CLASS = 'tailguard.error_class' as const
export const ATTR_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens' as const
/** Live figures per service (docs/signals.md), each over the last 5 minutes. */
export const PROM_SERVICE_GOODPUT = 'tailguard_service_goodput_requests_per_second' as const
export const PROM_SERVICE_TOKENS = 'tailguard_service_tokens_per_second' as const
export const PROM_SERVICE_COST_PER_MILLION_REQUESTS =
  'tailguard_service_cost_usd_per_million_requests' as const
export const PROM_SERVICE_COST_PER_MILLION_TOKENS =
  'tailguard_service_cost_usd_per_million_output_tokens' as const
export const PROM_SERVICE_ENERGY_PER_TOKEN = 'tailguard_service_energy_joules_per_output_token' as const
