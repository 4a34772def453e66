import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { availableParallelism } from 'node:os'
import { buildCollector } from './app.js'
import type { TailguardConfig } from './config/index.js'
import { createStore, storeDatabase } from './store/index.js'
import { createSloEngine, formatProblems } from './slo/index.js'
import type { SloEngine, SloTables } from './slo/index.js'
import type { Kysely } from 'kysely'
import { createSloRoutes } from './routes/slos.js'
import { createControllerRoutes } from './routes/controllers.js'
import { createControllerStore } from './controllers/persistence.js'
import type { Store } from './store/types.js'
import { CliError } from './cli/command.js'
import { dashboardDistDir } from './paths.js'
import { resolveIngestWorkers } from './ingest/pool.js'
import { parseDurationMs } from './time.js'
import { latencyThresholds } from './live/service-figures.js'

/** What `tailguard start` adds to a collector: API plugins (the controller's routes) and a clock for tests. */
export interface RunCollectorExtra {
  readonly plugins?: ReadonlyArray<(app: FastifyInstance) => Promise<void>>
  readonly clock?: () => number
}

export interface RunningCollector {
  readonly app: FastifyInstance
  readonly store: Store
  /** Base URL the collector listens on, e.g. `http://127.0.0.1:7070`. */
  readonly url: string
  readonly slos: SloEngine
  stop(): Promise<void>
}

/**
 * Opens the store (applying migrations), builds the app, listens, and compacts rollups periodically.
 * Used by `tailguard collector` and `tailguard start`.
 *
 * @example
 * ```ts
 * const c = await runCollector(config, logger)
 * await c.stop()
 * ```
 */
export async function runCollector(
  cfg: Readonly<TailguardConfig>,
  logger: FastifyBaseLogger,
  extra: RunCollectorExtra = {},
): Promise<RunningCollector> {
  const c = cfg.collector
  if (c.apiTokens.length === 0)
    throw new CliError(
      'no API token configured: set TAILGUARD_API_TOKEN (admin) or TAILGUARD_READ_TOKEN, or collector.apiTokens in the config file',
    )
  if (c.agentTokens.length === 0)
    throw new CliError(
      'no agent token configured: set TAILGUARD_AGENT_TOKEN, or collector.agentTokens in the config file',
    )
  const retention = Object.fromEntries(
    Object.entries(c.retention).map(([level, d]) => [level, d === null ? null : parseDurationMs(d)!]),
  )
  const store = await createStore({ url: c.db, retention, logger: (line: string) => logger.info(line) })
  const migrated = await store.migrate()
  if (migrated.kind === 'failed') {
    await store.close()
    throw new CliError(`migration ${migrated.migration} failed: ${migrated.error}`)
  }
  const clock = extra.clock ?? Date.now
  const slos = createSloEngine({
    source: store,
    // kysely's types are invariant in the table map; the SLO tables are a subset of DB (schema.ts).
    db: storeDatabase(store) as unknown as Kysely<SloTables>,
    clock,
    logger,
    evaluationIntervalMs: c.sloEvaluationMs,
    maxSeriesPerSlo: c.sloMaxSeries,
    webhooks: c.webhooks,
    ...(c.externalUrl ? { externalUrl: c.externalUrl } : {}),
  })
  if (c.slos) {
    const loaded = await slos.useFiles(c.slos)
    if (!loaded.ok) {
      // Nothing is watched after a failed first load; stop() ends the engine's timers all the same.
      await slos.stop()
      await store.close()
      throw new CliError(`invalid SLO definitions:\n${formatProblems(loaded.problems)}`)
    }
    logger.info(`loaded ${loaded.slos.length} SLO(s) from ${c.slos}`)
  }
  const cores = availableParallelism()
  const ingestWorkers = resolveIngestWorkers(c.ingestWorkers, cores)
  if (ingestWorkers > 0)
    logger.info(
      `ingest workers: ${ingestWorkers}${c.ingestWorkers === 'auto' ? ` (auto, ${cores} cores)` : ''}`,
    )
  const app = await buildCollector(
    {
      tokens: [...c.apiTokens, ...c.agentTokens.map((t) => ({ ...t, scope: 'agent' as const }))],
      reportBodyLimitBytes: c.reportBodyLimitBytes,
      bodyLimitBytes: c.bodyLimitBytes,
      ingestWorkers,
      ingestWorkerMinBytes: c.ingestWorkerMinBytes,
      dashboardDir: dashboardDistDir(),
      metricsPublic: c.metricsPublic,
      timeouts: {
        requestTimeoutMs: c.requestTimeoutMs,
        headersTimeoutMs: c.headersTimeoutMs,
        idleTimeoutMs: c.idleTimeoutMs,
      },
    },
    {
      store,
      logger,
      clock,
      figures: {
        pricing: c.pricing,
        latencySlos: () => latencyThresholds(slos),
      },
      plugins: [
        createSloRoutes(slos),
        createControllerRoutes(createControllerStore(store)),
        ...(extra.plugins ?? []),
      ],
    },
  )
  try {
    await app.listen({ host: c.host, port: c.port })
  } catch (err) {
    // A busy port must not leave a half-started collector behind (open store, SLO file watcher).
    await app.close()
    await slos.stop()
    await store.close()
    throw err
  }
  const addr = app.server.address()
  const port = addr && typeof addr === 'object' ? addr.port : c.port
  const host = c.host.includes(':') ? `[${c.host}]` : c.host
  slos.start()
  let compacting: Promise<unknown> | null = null
  const compactTimer = setInterval(() => {
    if (compacting) return
    compacting = store
      .compact(clock())
      .catch((err: unknown) => logger.error({ err }, 'compaction failed'))
      .finally(() => {
        compacting = null
      })
  }, c.compactEveryMs)
  compactTimer.unref()
  return {
    app,
    store,
    url: `http://${host}:${port}`,
    slos,
    async stop() {
      clearInterval(compactTimer)
      await slos.stop()
      await app.close()
      if (compacting) await compacting
      await store.close()
    },
  }
}
