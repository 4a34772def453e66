import type { FastifyBaseLogger } from 'fastify'
import { DEFAULT_OTLP_GRPC_PORT } from '../collector/index.js'
import type { AgentConfig } from '../collector/index.js'
import { startAgent } from './agent.js'
import type { AgentDeps, RunningAgent } from './agent.js'
import { createGpuCollector, createGpuSources, createPidResolver } from './gpu/index.js'
import { otlpReceiver } from './sources/otlp/receiver.js'
import { startOtlpGrpcReceiver } from './sources/otlp/grpc-receiver.js'
import { createSpanMapper } from './sources/otlp/mapping.js'
import { Counter, Histogram } from 'prom-client'
import { createDcgmSource } from './sources/dcgm.js'
import { createScrapeSource } from './sources/scrape/source.js'
import type { ScrapeOutcome } from './sources/scrape/source.js'
import { createProxySource, proxyOptionsFromConfig } from './proxy/source.js'
import { setpointsRoutes } from './proxy/routes.js'
import type { Proxy } from './proxy/proxy.js'
import type { SetpointsState } from './proxy/setpoints.js'

/** A running agent and its proxy (null when `agent.proxy.port` is not set). */
export type RunningAgentWithProxy = RunningAgent & {
  readonly proxy: Proxy | null
  readonly proxyAddress: { host: string; port: number } | null
}

const LOOPBACK = /^(127\.|::1$|\[::1\]$|localhost$)/

/**
 * Whether a host name or address is this machine's loopback (`127.x`, `::1` bare or as a URL writes it,
 * `localhost`).
 *
 * @example isLoopbackHost(new URL('http://[::1]:4318').hostname) // true
 */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host)
}

/**
 * The OTLP/gRPC port an agent config asks for: `otlpGrpcPort` when set (null: no gRPC receiver), else 4317,
 * or a free port (0) when the OTLP/HTTP port is 0, so that asking for free ports gets free ports for both.
 *
 * @example otlpGrpcPortOf({ ...cfg.agent, otlp: { ...cfg.agent.otlp, port: 0 } }) // 0
 */
export function otlpGrpcPortOf(cfg: Pick<AgentConfig, 'otlpGrpcPort' | 'otlp'>): number | null {
  if (cfg.otlpGrpcPort !== undefined) return cfg.otlpGrpcPort
  return cfg.otlp.port === 0 ? 0 : DEFAULT_OTLP_GRPC_PORT
}

/**
 * Starts the agent described by a validated config section: listener, OTLP/HTTP and OTLP/gRPC receivers,
 * sources, shipper. Used by `tailguard agent` and `tailguard start`.
 *
 * @example const agent = await runAgent(config.agent, logger)
 */
export async function runAgent(
  cfg: Readonly<AgentConfig>,
  logger: FastifyBaseLogger,
  deps: AgentDeps & {
    /**
     * Setpoints of proxies that run beside the agent rather than in it (the demo's), served on the setpoints API
     * when the agent has no proxy of its own.
     */
    readonly setpoints?: SetpointsState
    /** The proxy may start with no upstream: a controller's `process` actuator fills its set. */
    readonly upstreamsFilledLater?: boolean
  } = {},
): Promise<RunningAgentWithProxy> {
  if (!cfg.otlp.token && !isLoopbackHost(cfg.otlp.host))
    logger.warn(
      `OTLP receiver on ${cfg.otlp.host} accepts spans without a token: set TAILGUARD_OTLP_TOKEN (agent.otlp.token)`,
    )
  const targets = cfg.scrape ?? []
  // DCGM exporter targets are GPU sources (the same reader as agent.gpu.dcgmUrl); the rest are model servers.
  const dcgmTargets = targets.filter((t) => t.kind === 'dcgm')
  let onScrape: ((o: ScrapeOutcome) => void) | undefined
  const scrapeSources = targets
    .filter((t) => t.kind !== 'dcgm')
    .map((t) => {
      const inherit = behindProxy(t, cfg)
      return {
        ...t,
        service: t.service ?? inherit.service,
        version: t.version ?? inherit.version,
        replica: t.replica ?? inherit.replica,
        countRequests: !inherit.proxied,
      }
    })
    .map((t) =>
      createScrapeSource(
        {
          url: t.url,
          kind: t.kind ?? 'auto',
          ...(t.service !== undefined ? { service: t.service } : {}),
          ...(t.model !== undefined ? { model: t.model } : {}),
          ...(t.version !== undefined ? { version: t.version } : {}),
          ...(t.replica !== undefined ? { replica: t.replica } : {}),
          ...(t.periodMs !== undefined ? { periodMs: t.periodMs } : {}),
          countRequests: t.countRequests,
        },
        {
          node: cfg.node,
          log: (level, line) => logger[level](line),
          onScrape: (o) => onScrape?.(o),
        },
      ),
    )
  const gpu =
    deps.gpu ??
    createGpuCollector({
      sources: [
        ...createGpuSources({
          nvml: cfg.gpu.nvml,
          ...(cfg.gpu.nvmlLibrary ? { nvmlLibrary: cfg.gpu.nvmlLibrary } : {}),
          ...(cfg.gpu.dcgmUrl ? { dcgmUrl: cfg.gpu.dcgmUrl } : {}),
          periodMs: cfg.gpu.periodMs,
          log: (line) => logger.info(line),
        }),
        ...dcgmTargets.map((t) =>
          createDcgmSource({
            url: t.url,
            every: t.periodMs ?? cfg.gpu.periodMs,
            log: (line) => logger.info(line),
          }),
        ),
      ],
      resolvePid: createPidResolver({
        procRoot: cfg.gpu.procRoot,
        replicas: () =>
          cfg.replicas.map((r) => ({
            ref: { service: r.service, model: r.model, version: r.version, replica: r.replica },
            ...(r.pids ? { pids: r.pids } : {}),
            ...(r.podUid ? { podUid: r.podUid } : {}),
            ...(r.containerId ? { containerId: r.containerId } : {}),
          })),
      }),
      hostname: cfg.node,
    })
  const proxySource =
    cfg.proxy.port !== null
      ? createProxySource(proxyOptionsFromConfig(cfg), (level, msg) => logger[level](msg))
      : null
  if (proxySource && cfg.proxy.upstreams.length === 0 && deps.upstreamsFilledLater !== true)
    throw new Error('the proxy needs at least one upstream: --upstream URL (agent.proxy.upstreams)')
  const mapper = createSpanMapper(cfg.mapping)
  let spans: Counter<'outcome'> | null = null
  const agent = await startAgent(
    {
      id: cfg.id,
      node: cfg.node,
      collectorUrl: cfg.collector,
      token: cfg.token,
      intervalMs: cfg.intervalMs,
      spoolDir: cfg.spoolDir,
      spoolMaxBytes: cfg.spoolMaxBytes,
      http: {
        host: cfg.otlp.host,
        port: cfg.otlp.port,
        token: cfg.otlp.token,
        timeouts: {
          requestTimeoutMs: cfg.otlp.requestTimeoutMs,
          headersTimeoutMs: cfg.otlp.headersTimeoutMs,
          idleTimeoutMs: cfg.otlp.idleTimeoutMs,
        },
      },
      limits: cfg.limits,
    },
    {
      logger,
      ...deps,
      gpu,
      sources: [...scrapeSources, ...(deps.sources ?? []), ...(proxySource ? [proxySource] : [])],
      ...(proxySource
        ? {
            signals: () => [...(deps.signals?.() ?? []), ...proxySource.takeSignals()],
            health: () => {
              const sp = proxySource.proxy?.setpoints.view()
              return sp
                ? {
                    proxy: {
                      address: proxySource.address,
                      setpoints: {
                        source: sp.source,
                        updatedAt: sp.updatedAt,
                        stale: sp.stale,
                        limit: sp.limit,
                      },
                      upstreams: proxySource.proxy!.upstreams.view(),
                    },
                  }
                : {}
            },
          }
        : {}),
      plugins: [
        async (_app, { registry }) => {
          const scrapes = new Counter({
            name: 'tailguard_agent_scrapes_total',
            help: 'Scrapes of model servers, by target and outcome',
            labelNames: ['target', 'outcome'] as const,
            registers: [registry],
          })
          const seconds = new Histogram({
            name: 'tailguard_agent_scrape_duration_seconds',
            help: 'Time to fetch, parse and map one scrape',
            labelNames: ['target'] as const,
            buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
            registers: [registry],
          })
          onScrape = (o) => {
            scrapes.inc({ target: o.target, outcome: o.ok ? 'ok' : 'failed' })
            seconds.observe({ target: o.target }, o.durationMs / 1000)
          }
        },
        async (app, { recorder, registry }) => {
          spans = new Counter({
            name: 'tailguard_agent_otlp_spans_total',
            help: 'OTLP spans received, by outcome',
            labelNames: ['outcome'] as const,
            registers: [registry],
          })
          const requests = new Counter({
            name: 'tailguard_agent_otlp_requests_total',
            help: 'OTLP/HTTP export requests, by HTTP status and encoding',
            labelNames: ['status', 'encoding'] as const,
            registers: [registry],
          })
          const counted = spans
          await app.register(otlpReceiver, {
            sink: recorder,
            mapping: mapper,
            bodyLimitBytes: cfg.otlp.bodyLimitBytes,
            ...(cfg.otlp.token ? { token: cfg.otlp.token } : {}),
            onExport: (r) => {
              requests.inc({ status: String(r.statusCode), encoding: r.encoding ?? 'unknown' })
              countSpans(counted, r.spans, r.refused)
            },
          })
        },
        async (app, { registry }) => {
          if (!proxySource?.proxy) {
            if (deps.setpoints)
              await app.register(setpointsRoutes, {
                proxy: { setpoints: deps.setpoints },
                adminToken: cfg.adminToken,
              })
            return
          }
          proxySource.registerMetrics(registry)
          await app.register(setpointsRoutes, { proxy: proxySource.proxy, adminToken: cfg.adminToken })
        },
        ...(deps.plugins ?? []),
      ],
    },
  )
  const grpcPort = otlpGrpcPortOf(cfg)
  const withProxy = { proxy: proxySource?.proxy ?? null, proxyAddress: proxySource?.address ?? null }
  if (grpcPort === null) return { ...agent, grpcAddress: null, ...withProxy }
  const grpcRequests = new Counter({
    name: 'tailguard_agent_otlp_grpc_requests_total',
    help: 'OTLP/gRPC export calls, by gRPC status code',
    labelNames: ['code'] as const,
    registers: [agent.registry],
  })
  const counted = spans as Counter<'outcome'> | null
  let grpcReceiver
  try {
    grpcReceiver = await startOtlpGrpcReceiver({
      host: cfg.otlp.host,
      port: grpcPort,
      sink: agent.recorder,
      mapping: mapper,
      maxMessageBytes: cfg.otlp.bodyLimitBytes,
      token: cfg.otlp.token,
      onExport: (r) => {
        grpcRequests.inc({ code: r.code })
        if (counted) countSpans(counted, r.spans, r.refused)
      },
    })
  } catch (err) {
    await agent.stop()
    throw err
  }
  const receiver = grpcReceiver
  return {
    ...agent,
    ...withProxy,
    grpcAddress: receiver.address,
    async stop() {
      // Stop taking spans first, so the agent's last report holds everything accepted.
      await receiver.stop()
      await agent.stop()
    },
  }
}

function countSpans(spans: Counter<'outcome'>, total: number, refused: number): void {
  spans.inc({ outcome: 'accepted' }, Math.max(0, total - refused))
  if (refused > 0) spans.inc({ outcome: 'refused' }, refused)
}

/**
 * Labels a scraped server inherits from this agent's proxy when the proxy forwards to it (same host and port):
 * its service and version, and its replica when it is the proxy's only upstream. Without them the server's
 * running and waiting counts land under the model's name while the proxy's requests land under the proxy's
 * service, and a controller watching that service never sees the queue inside the server. Labels the scrape
 * target sets itself win. Such a server's request counters are not counted (the proxy counts those requests).
 *
 * @example behindProxy({ url: 'http://127.0.0.1:8000/metrics' }, cfg) // { proxied: true, service: 'chat', version: '1', replica: 'r0' }
 */
export function behindProxy(
  target: { readonly url: string },
  cfg: Pick<Readonly<AgentConfig>, 'proxy' | 'id'>,
): { proxied?: true; service?: string; version?: string; replica?: string } {
  if (cfg.proxy.port === null) return {}
  const host = (u: string) => {
    try {
      return new URL(u).host
    } catch {
      return null
    }
  }
  const h = host(target.url)
  const ups = cfg.proxy.upstreams.map(host)
  if (h === null || !ups.includes(h)) return {}
  const l = cfg.proxy.labels
  return {
    proxied: true,
    ...(l.service ? { service: l.service } : {}),
    ...(l.version ? { version: l.version } : {}),
    ...(ups.length === 1 ? { replica: l.replica || cfg.id } : {}),
  }
}
