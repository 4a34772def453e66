import type { RegisterCommand } from './command.js'
import { CliError } from './command.js'
import { loadConfig, withCommonOptions } from './options.js'
import { createStore } from '../deferred.js'

/** `tailguard migrate`: applies pending database migrations and exits. */
export const registerMigrate: RegisterCommand = (program, io) => {
  withCommonOptions(
    program
      .command('migrate')
      .description('Apply pending database migrations (also done at collector start) and exit')
      .option('--db <url>', 'SQLite file path or postgres:// URL (default ./tailguard.db)'),
  ).action(async (flags: { config?: string; db?: string }) => {
    const cfg = loadConfig(flags.config, { collector: flags.db !== undefined ? { db: flags.db } : {} })
    const store = await createStore({ url: cfg.collector.db, migrate: false })
    try {
      const result = await store.migrate()
      if (result.kind === 'failed')
        throw new CliError(`migration ${result.migration} failed: ${result.error}`)
      io.out(
        result.applied.length === 0
          ? `${store.dialect}: database is up to date`
          : `${store.dialect}: applied ${result.applied.length} migration(s):\n${result.applied.map((m) => `  ${m}`).join('\n')}`,
      )
    } finally {
      await store.close()
    }
  })
}
