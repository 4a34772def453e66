import { timingSafeEqual, createHash } from 'node:crypto'
import Fastify, { LogController } from 'fastify'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { join } from 'node:path'
import { DEFAULT_SERVER_TIMEOUTS, serverTimeoutOptions } from '../collector/index.js'
import type { ServerTimeouts } from '../collector/index.js'
import { createRecorder } from './recorder.js'
import type { Recorder, RecorderLimits } from './recorder.js'
import { openSpool } from './ship/spool.js'
import { openDeadLetter } from './ship/dead-letter.js'
import { createShipper } from './ship/shipper.js'
import type { Shipper } from './ship/shipper.js'
import type { Source } from './types.js'
import type { GpuCollector } from './gpu/index.js'
import type { SeriesLabels, SeriesSignals } from '../collector/index.js'

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
  readonly http: {
    readonly host: string
    readonly port: number
    readonly token: string | null
    /** Slow-client timeouts (default {@link DEFAULT_SERVER_TIMEOUTS}). */
    readonly timeouts?: ServerTimeouts
  } | null
  /** Label-set limits of the recorder (default DEFAULT_RECORDER_LIMITS). */
  readonly limits?: Partial<RecorderLimits>
  /** Reports the collector refused as bad go here (default `<spoolDir>/dead-letter`, or memory). */
  readonly deadLetterDir?: string | null
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
  /** Live signals per series (the proxy's gauges), put in every interval report. */
  readonly signals?: () => ReadonlyArray<{ readonly labels: SeriesLabels; readonly signals: SeriesSignals }>
  /** Extra entries for `/healthz` (the proxy's setpoint status). */
  readonly health?: () => Record<string, unknown>
  /** GPU telemetry (NVML, DCGM exporter): folded into each interval report, exposed on /metrics. */
  readonly gpu?: GpuCollector
}

export interface RunningAgent {
  readonly recorder: Recorder
  readonly shipper: Shipper
  readonly registry: Registry
  /** The bound listener address, when there is one. */
  readonly address: { host: string; port: number } | null
  /** The OTLP/gRPC receiver's address, when `runAgent` started one. */
  readonly grpcAddress?: { host: string; port: number } | null
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
  const recorder = createRecorder(opts.limits)
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'tailguard_agent_' })
  const spool = openSpool({
    dir: opts.spoolDir,
    maxBytes: opts.spoolMaxBytes,
    onCorrupt: (file) => log?.warn(`spool file ${file} is unreadable; moved aside as .corrupt`),
  })
  const deadLetterDir =
    opts.deadLetterDir !== undefined
      ? opts.deadLetterDir
      : opts.spoolDir
        ? join(opts.spoolDir, 'dead-letter')
        : null
  const deadLetter = openDeadLetter({ dir: deadLetterDir, maxFiles: 1000 })
  const shipper = createShipper({
    deadLetter,
    collectorUrl: opts.collectorUrl,
    token: opts.token,
    agentId: opts.id,
    node: opts.node,
    intervalMs: opts.intervalMs,
    recorder,
    spool,
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.gpu ? { extras: () => ({ gpus: deps.gpu!.drainInterval() }) } : {}),
    ...(deps.signals ? { signals: deps.signals } : {}),
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
  new Gauge({
    name: 'tailguard_agent_dead_letter_reports',
    help: 'Reports and series in the dead-letter box (refused as bad by the collector, or set aside)',
    registers: [registry],
    collect() {
      this.set(deadLetter.count)
    },
  })
  const series = new Gauge({
    name: 'tailguard_agent_series',
    help: 'Label sets the recorder holds, by kind (ordinary, overflow)',
    labelNames: ['kind'] as const,
    registers: [registry],
    collect() {
      const st = recorder.stats()
      series.set({ kind: 'ordinary' }, st.series - st.overflowSeries)
      series.set({ kind: 'overflow' }, st.overflowSeries)
    },
  })
  const cumulative = (name: string, help: string, value: () => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset()
        this.inc(value())
      },
    })
  cumulative(
    'tailguard_agent_series_overflow_label_sets_total',
    'Distinct label sets folded into overflow series (over the per-agent or per-service limit), summed per interval',
    () => recorder.stats().overflowLabelSets,
  )
  cumulative(
    'tailguard_agent_series_overflow_observations_total',
    'Observations recorded into overflow series',
    () => recorder.stats().overflowObservations,
  )
  cumulative(
    'tailguard_agent_labels_repaired_total',
    'Label values repaired (invalid UTF-16 replaced by U+FFFD, NUL removed, cut to 256 characters)',
    () => recorder.stats().labelsRepaired,
  )
  let last = { ...shipper.stats }
  const syncShipped = () => {
    const s = shipper.stats
    shipped.inc({ outcome: 'acked' }, s.acked - last.acked)
    shipped.inc({ outcome: 'duplicate' }, s.duplicates - last.duplicates)
    shipped.inc({ outcome: 'rejected' }, s.rejected - last.rejected)
    shipped.inc({ outcome: 'failed' }, s.failures - last.failures)
    shipped.inc({ outcome: 'spool_dropped' }, s.spoolDropped - last.spoolDropped)
    shipped.inc({ outcome: 'dead_lettered' }, s.deadLettered - last.deadLettered)
    shipped.inc({ outcome: 'split' }, s.splits - last.splits)
    shipped.inc({ outcome: 'series_set_aside' }, s.seriesSetAside - last.seriesSetAside)
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
    app = Fastify({
      loggerInstance: log,
      logController: new LogController({ disableRequestLogging: true }),
      ...serverTimeoutOptions(http.timeouts ?? DEFAULT_SERVER_TIMEOUTS),
    })
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
      // Still 200: restarting the agent would not fix a token, and the spool keeps every report meanwhile.
      // Dead letters make it degraded too: data the collector refused needs a person (list, fix, replay).
      status: shipper.stats.authRefused || deadLetter.count > 0 ? 'degraded' : 'ok',
      collector: {
        url: opts.collectorUrl,
        tokenRefused: shipper.stats.authRefused,
        ...(shipper.stats.authRefused
          ? {
              problem: `collector refused the agent token (${shipper.stats.authRefused}): check TAILGUARD_AGENT_TOKEN`,
            }
          : {}),
        lastError: shipper.stats.lastError,
      },
      spool: { reports: spool.size, bytes: spool.bytes },
      deadLetters: {
        count: deadLetter.count,
        ...(deadLetterDir ? { dir: deadLetterDir } : {}),
        ...(deadLetter.count > 0
          ? {
              problem: `${deadLetter.count} report(s) or series refused as bad: see tailguard dead-letter list${deadLetterDir ? ` --dir ${deadLetterDir}` : ''}`,
            }
          : {}),
      },
      sources: [
        ...(deps.sources ?? []).map((s) => ({ name: s.name, ...s.status() })),
        ...(deps.gpu?.statuses() ?? []).map((s) => ({ name: s.name, ...s.status })),
      ],
      ...deps.health?.(),
    }))
    app.get('/metrics', async (_req, reply) => {
      syncShipped()
      return reply.header('content-type', registry.contentType).send(await registry.metrics())
    })
    for (const plugin of deps.plugins ?? []) await plugin(app, { recorder, registry })
    try {
      await app.listen({ host: http.host, port: http.port })
    } catch (err) {
      // A busy port must not leave sources and GPU samplers running with nothing to serve them.
      await app.close()
      for (const source of deps.sources ?? []) await source.stop()
      await deps.gpu?.stop()
      throw err
    }
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
