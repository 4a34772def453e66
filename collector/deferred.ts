/**
 * The collector's heavy entry points, loaded on first call: the store (kysely and the database drivers) and
 * the server (fastify's plugins, the routes, the SLO engine). A standalone agent needs only the report format,
 * the config and the CLI helpers from `index.ts`, so it never loads these (test/bin/lean-agent.test.ts).
 */
import type { FastifyBaseLogger } from 'fastify'
import type { TailguardConfig } from './config/index.js'
import type { RunCollectorExtra, RunningCollector } from './run.js'
import type { StoreOptions } from './store/create-store.js'
import type { Store } from './store/types.js'

/**
 * Opens a store (SQLite or PostgreSQL, by URL); see `store/create-store.ts`.
 *
 * @example const store = await createStore({ url: 'sqlite:tailguard.db' })
 */
export async function createStore(opts: StoreOptions): Promise<Store> {
  return (await import('./store/create-store.js')).createStore(opts)
}

/**
 * Opens the store and serves the collector's API; see `run.ts`.
 *
 * @example const c = await runCollector(config, logger)
 */
export async function runCollector(
  cfg: Readonly<TailguardConfig>,
  logger: FastifyBaseLogger,
  extra?: RunCollectorExtra,
): Promise<RunningCollector> {
  return (await import('./run.js')).runCollector(cfg, logger, extra)
}
