import type { Migration, MigrationProvider } from 'kysely'

/**
 * Every migration, by name. Names sort in run order (kysely's Migrator orders by name and refuses
 * out-of-order ones); add one line per new migration file. A static record rather than kysely's
 * FileMigrationProvider, so it works under vitest on `.ts` files and compiled to `dist/*.js` alike.
 */
const MIGRATIONS: Readonly<Record<string, () => Promise<Migration>>> = {
  '2026-11-21T2100_initial': () => import('./2026-11-21T2100_initial.js'),
  '2026-11-21T2200_slo': () => import('./2026-11-21T2200_slo.js'),
  '2026-11-21T2300_gpu': () => import('./2026-11-21T2300_gpu.js'),
  '2026-11-23T1000_service_rollups': () => import('./2026-11-23T1000_service_rollups.js'),
  '2026-11-23T1100_signals': () => import('./2026-11-23T1100_signals.js'),
  '2026-11-23T1200_controller': () => import('./2026-11-23T1200_controller.js'),
  '2026-11-25T1000_service_counts': () => import('./2026-11-25T1000_service_counts.js'),
  '2026-11-26T2200_partial_lookup': () => import('./2026-11-26T2200_partial_lookup.js'),
  '2026-11-27T0500_packed_finest': () => import('./2026-11-27T0500_packed_finest.js'),
}

/**
 * The names of every migration, in run order.
 *
 * @example MIGRATION_NAMES[0] // '2026-11-21T2100_initial'
 */
export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS).sort()

/**
 * A kysely `MigrationProvider` over the static list above.
 *
 * @example
 * ```ts
 * const migrator = new Migrator({ db, provider: migrationProvider })
 * const { error, results } = await migrator.migrateToLatest()
 * ```
 */
export const migrationProvider: MigrationProvider = {
  async getMigrations(): Promise<Record<string, Migration>> {
    const entries = await Promise.all(
      MIGRATION_NAMES.map(async (name) => [name, await MIGRATIONS[name]!()] as const),
    )
    return Object.fromEntries(entries)
  },
}
