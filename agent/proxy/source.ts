import { Counter, Gauge } from 'prom-client'
import type { Registry } from 'prom-client'
import type { AgentConfig, SeriesLabels, SeriesSignals } from '../../collector/index.js'
import type { SampleSink, Source, SourceStatus } from '../types.js'
import { createProxy, PROXY_DEFAULTS } from './proxy.js'
import type { Proxy, ProxyOptions } from './proxy.js'

/**
 * The proxy as an agent {@link Source}: it is built and starts listening when the agent starts it with its
 * recorder, and stops with the agent.
 *
 * @example
 * ```ts
 * const source = createProxySource(proxyOptionsFromConfig(cfg.agent))
 * await startAgent(opts, { sources: [source], signals: () => source.takeSignals() })
 * ```
 */
export interface ProxySource extends Source {
  /** The running proxy (null before start). */
  readonly proxy: Proxy | null
  readonly address: { host: string; port: number } | null
  /** The interval's signals, or none before start. */
  takeSignals(): Array<{ labels: SeriesLabels; signals: SeriesSignals }>
  /** Proxy metrics on the agent's `/metrics`. */
  registerMetrics(registry: Registry): void
}

/**
 * Builds the proxy's options from the validated `agent` config section.
 *
 * @example const opts = proxyOptionsFromConfig(cfg.agent)
 */
export function proxyOptionsFromConfig(cfg: Readonly<AgentConfig>): ProxyOptions {
  const p = cfg.proxy
  const { localLimit: _localLimit, port, labels, ...rest } = p
  return {
    ...PROXY_DEFAULTS,
    ...rest,
    port: port ?? 0,
    gradient2: p.localLimit === 'gradient2' ? {} : null,
    labels: {
      service: labels.service,
      model: labels.model,
      version: labels.version,
      replica: labels.replica || cfg.id,
      node: cfg.node,
    },
  }
}

/**
 * Makes the proxy source.
 *
 * @example const source = createProxySource(opts, (level, msg) => logger[level](msg))
 */
export function createProxySource(
  opts: ProxyOptions,
  log?: (level: 'info' | 'warn' | 'error', msg: string) => void,
): ProxySource {
  let proxy: Proxy | null = null
  let address: { host: string; port: number } | null = null
  return {
    name: 'proxy',
    get proxy() {
      return proxy
    },
    get address() {
      return address
    },
    status(): SourceStatus {
      return { state: 'ok' }
    },
    async start(sink: SampleSink) {
      proxy = createProxy(opts, { sink, ...(log ? { log } : {}) })
      address = await proxy.listen()
    },
    async stop() {
      await proxy?.close()
    },
    takeSignals() {
      return proxy ? [proxy.takeSignals()] : []
    },
    registerMetrics(registry: Registry) {
      const counts = new Counter({
        name: 'tailguard_proxy_requests_total',
        help: 'Proxied requests since start, by outcome',
        labelNames: ['outcome'] as const,
        registers: [registry],
        collect() {
          if (!proxy) return
          const c = proxy.counts
          this.reset()
          this.inc({ outcome: 'received' }, c.requests)
          this.inc({ outcome: 'ok' }, c.ok)
          this.inc({ outcome: 'upstream_502' }, c.upstream502)
          this.inc({ outcome: 'upstream_504' }, c.upstream504)
          this.inc({ outcome: 'upstream_mid_stream' }, c.upstreamMidStream)
          this.inc({ outcome: 'client_closed' }, c.clientClosed)
          this.inc({ outcome: 'shed' }, c.shed)
          this.inc({ outcome: 'bad_request' }, c.badRequests)
          this.inc({ outcome: 'malformed' }, c.malformed)
          this.inc({ outcome: 'too_large' }, c.tooLarge)
          this.inc({ outcome: 'body_timeout' }, c.bodyTimeouts)
        },
      })
      void counts
      new Gauge({
        name: 'tailguard_proxy_in_flight',
        help: 'Requests in flight upstream',
        registers: [registry],
        collect() {
          this.set(proxy?.admission.inFlight ?? 0)
        },
      })
      new Gauge({
        name: 'tailguard_proxy_queued',
        help: 'Requests waiting in the admission queue',
        registers: [registry],
        collect() {
          this.set(proxy?.admission.queued ?? 0)
        },
      })
      new Counter({
        name: 'tailguard_proxy_shed_total',
        help: 'Shed requests since start, by priority class and reason',
        labelNames: ['class', 'reason'] as const,
        registers: [registry],
        collect() {
          if (!proxy) return
          this.reset()
          for (const [key, n] of proxy.admission.totals().shed) {
            const [cls, reason] = key.split('\u0000')
            this.inc({ class: cls!, reason: reason! }, n)
          }
        },
      })
      new Gauge({
        name: 'tailguard_proxy_limit',
        help: 'The local Gradient2 concurrency limit (absent when a controller sets the caps)',
        registers: [registry],
        collect() {
          const l = proxy?.admission.limit
          if (l !== null && l !== undefined) this.set(l)
        },
      })
    },
  }
}
