import { timingSafeEqual, createHash } from 'node:crypto'
import Fastify, { LogController } from 'fastify'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { createRecorder } from './recorder.js'
import type { Recorder } from './recorder.js'
import { openSpool } from './ship/spool.js'
import { createShipper } from './ship/shipper.js'
import type { Shipper } from './ship/shipper.js'
import type { Source } from './types.js'
import type { GpuCollector } from './gpu/index.js'

/** What {@link startAgent} needs; the CLI builds it from the validated config. */
export interface AgentOptions {
  readonly id: string
  readonly node: string
  readonly collectorUrl: string
  readonly token: string
  readonly intervalMs: number
  readonly spoolDir: string | null
  readonly spoolMaxBytes: number
  /** The HTTP listener for OTLP/HTTP and /metrics; `null` runs no listener (in-process agent). */
  readonly http: { readonly host: string; readonly port: number; readonly token: string | null } | null
}

export interface AgentDeps {
  readonly logger?: FastifyBaseLogger
  readonly clock?: () => number
  /** Sources to start with the agent (GPU samplers, scrapers). */
  readonly sources?: readonly Source[]
  /** Fastify plugins for the agent's listener (the OTLP receiver). They get the recorder. */
  readonly plugins?: ReadonlyArray<
    (app: FastifyInstance, ctx: { recorder: Recorder; registry: Registry }) => Promise<void>
  >
  /** GPU telemetry (NVML, DCGM exporter): folded into each interval report, exposed on /metrics. */
  readonly gpu?: GpuCollector
}

export interface RunningAgent {
  readonly recorder: Recorder
  readonly shipper: Shipper
  readonly registry: Registry
  /** The bound listener address, when there is one. */
  readonly address: { host: string; port: number } | null
  readonly app: FastifyInstance | null
  stop(): Promise<void>
}

const digest = (s: string) => createHash('sha256').update(s).digest()

/**
 * Starts an agent: a recorder that folds observations into HDR histograms, a shipper that sends one interval
 * report every `intervalMs` through a durable spool, the sources, and (optionally) an HTTP listener with the
 * plugins (OTLP/HTTP receiver) and `/metrics`, `/healthz`.
 *
 * @example
 * ```ts
 * const agent = await startAgent({ id: 'node-a', node: 'node-a', collectorUrl: 'http://127.0.0.1:7070', token, intervalMs: 5000,
 *   spoolDir: '/var/lib/tailguard/spool', spoolMaxBytes: 64 << 20, http: { host: '127.0.0.1', port: 4318, token: null } })
 * agent.recorder.recordRequest({ … })
 * await agent.stop()
 * ```
 */
export async function startAgent(opts: AgentOptions, deps: AgentDeps = {}): Promise<RunningAgent> {
  const log = deps.logger
  const recorder = createRecorder()
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'tailguard_agent_' })
  const spool = openSpool({
    dir: opts.spoolDir,
    maxBytes: opts.spoolMaxBytes,
    onCorrupt: (file) => log?.warn(`spool file ${file} is unreadable; moved aside as .corrupt`),
  })
  const shipper = createShipper({
    collectorUrl: opts.collectorUrl,
    token: opts.token,
    agentId: opts.id,
    node: opts.node,
    intervalMs: opts.intervalMs,
    recorder,
    spool,
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.gpu ? { extras: () => ({ gpus: deps.gpu!.drainInterval() }) } : {}),
    log: (level, msg) => log?.[level](msg),
  })

  new Gauge({
    name: 'tailguard_agent_requests_recorded_total',
    help: 'Requests recorded since the agent started',
    registers: [registry],
    collect() {
      this.set(recorder.recordedRequests)
    },
  })
  new Gauge({
    name: 'tailguard_agent_spool_reports',
    help: 'Reports waiting for the collector',
    registers: [registry],
    collect() {
      this.set(spool.size)
    },
  })
  new Gauge({
    name: 'tailguard_agent_spool_bytes',
    help: 'Bytes of reports waiting for the collector',
    registers: [registry],
    collect() {
      this.set(spool.bytes)
    },
  })
  const shipped = new Counter({
    name: 'tailguard_agent_reports_total',
    help: 'Report sends, by outcome',
    labelNames: ['outcome'] as const,
    registers: [registry],
  })
  let last = { ...shipper.stats }
  const syncShipped = () => {
    const s = shipper.stats
    shipped.inc({ outcome: 'acked' }, s.acked - last.acked)
    shipped.inc({ outcome: 'duplicate' }, s.duplicates - last.duplicates)
    shipped.inc({ outcome: 'rejected' }, s.rejected - last.rejected)
    shipped.inc({ outcome: 'failed' }, s.failures - last.failures)
    shipped.inc({ outcome: 'spool_dropped' }, s.spoolDropped - last.spoolDropped)
    last = { ...s }
  }

  for (const source of deps.sources ?? []) {
    const st = source.status()
    if (st.state === 'unavailable') log?.warn(`source ${source.name} unavailable: ${st.reason}`)
    await source.start(recorder)
  }

  if (deps.gpu) {
    deps.gpu.registerMetrics(registry)
    await deps.gpu.start(recorder)
    for (const { name, status } of deps.gpu.statuses())
      if (status.state === 'unavailable') log?.warn(`GPU source ${name} unavailable: ${status.reason}`)
  }

  let app: FastifyInstance | null = null
  let address: { host: string; port: number } | null = null
  if (opts.http) {
    const http = opts.http
    app = Fastify({ loggerInstance: log, logController: new LogController({ disableRequestLogging: true }) })
    const want = http.token ? digest(http.token) : null
    app.addHook('onRequest', async (req, reply) => {
      if (!want || req.url === '/healthz' || req.url.startsWith('/v1/')) return // the OTLP receiver answers in OTLP's own format
      const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')
      if (!m || !timingSafeEqual(digest(m[1]!), want)) {
        await reply
          .code(401)
          .send({ code: 'TG_ERR_UNAUTHORIZED', statusCode: 401, message: 'missing or invalid bearer token' })
        return reply
      }
    })
    app.get('/healthz', async () => ({
      status: 'ok',
      spool: { reports: spool.size, bytes: spool.bytes },
      sources: [
        ...(deps.sources ?? []).map((s) => ({ name: s.name, ...s.status() })),
        ...(deps.gpu?.statuses() ?? []).map((s) => ({ name: s.name, ...s.status })),
      ],
    }))
    app.get('/metrics', async (_req, reply) => {
      syncShipped()
      return reply.header('content-type', registry.contentType).send(await registry.metrics())
    })
    for (const plugin of deps.plugins ?? []) await plugin(app, { recorder, registry })
    await app.listen({ host: http.host, port: http.port })
    const a = app.server.address()
    address = a && typeof a === 'object' ? { host: a.address, port: a.port } : null
  }

  shipper.start()
  return {
    recorder,
    shipper,
    registry,
    address,
    app,
    async stop() {
      if (app) await app.close()
      for (const source of deps.sources ?? []) await source.stop()
      await deps.gpu?.stop()
      await shipper.stop()
    },
  }
}
