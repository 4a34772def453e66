// The reference Prometheus parser the scrape tests compare against ships no types; this is the part they use.
declare module 'parse-prometheus-text-format' {
  /** One metric family as the library returns it. */
  export interface PrometheusFamily {
    name: string
    help: string
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'
    metrics: Array<{
      labels?: Record<string, string>
      value?: string
      buckets?: Record<string, string>
      quantiles?: Record<string, string>
      count?: string
      sum?: string
    }>
  }
  /** Parses Prometheus text exposition; throws on a line it does not accept. */
  export default function parsePrometheusTextFormat(text: string): PrometheusFamily[]
}
