import type { FastifyInstance } from 'fastify'
import type { RegisterCommand } from './command.js'
import {
  assertPortsFree,
  listening,
  loadConfig,
  makeLogger,
  portArg,
  untilSignal,
  withCommonOptions,
  workersArg,
} from './options.js'
import { runCollector } from '../deferred.js'

interface CollectorFlags {
  config?: string
  logLevel: string
  logFormat?: 'auto' | 'pretty' | 'json'
  host?: string
  port?: number
  db?: string
  slos?: string
  metricsPublic?: boolean
  ingestWorkers?: number | 'auto'
}

/**
 * `tailguard collector` with route plugins of other parts (the composition root passes the controller's
 * what-if route): report ingest, storage, query API, /metrics and the dashboard.
 *
 * @example collectorCommand({ plugins: [createWhatifRoutes()] })(program, io)
 */
export function collectorCommand(
  extra: { plugins?: ReadonlyArray<(app: FastifyInstance) => Promise<void>> } = {},
): RegisterCommand {
  return (program, io) => registerCollectorWith(program, io, extra.plugins ?? [])
}

/** `tailguard collector`: report ingest, storage, query API, /metrics and the dashboard. */
export const registerCollector: RegisterCommand = collectorCommand()

function registerCollectorWith(
  program: Parameters<RegisterCommand>[0],
  io: Parameters<RegisterCommand>[1],
  plugins: ReadonlyArray<(app: FastifyInstance) => Promise<void>>,
): void {
  withCommonOptions(
    program
      .command('collector')
      .description(
        'Run the collector: report ingest, storage (SQLite or PostgreSQL), query API, /metrics and the dashboard',
      )
      .option('--host <host>', 'address to listen on (default 127.0.0.1)')
      .option('--port <n>', 'HTTP port (default 7070)', portArg('--port'))
      .option('--db <url>', 'SQLite file path or postgres://user@host:5432/db URL (default ./tailguard.db)')
      .option(
        '--slos <path>',
        'SLO definitions: a file or a folder (tailguard YAML or OpenSLO), reloaded on change',
      )
      .option('--metrics-public', 'serve /metrics without a token')
      .option(
        '--ingest-workers <n>',
        "threads that parse and check large report bodies beside the main one: a number, or 'auto' (default: up to 4, leaving 2 cores; none below 4 cores)",
        workersArg('--ingest-workers'),
      ),
  )
    .addHelpText(
      'after',
      '\nTokens: TAILGUARD_API_TOKEN (admin), TAILGUARD_READ_TOKEN (read) and TAILGUARD_AGENT_TOKEN (agents), or collector.apiTokens/agentTokens in the config file.\nExample: tailguard collector --port 7070 --db postgres://postgres@127.0.0.1:5432/tailguard',
    )
    .action(async (flags: CollectorFlags) => {
      const cfg = loadConfig(flags.config, {
        collector: {
          ...(flags.host !== undefined ? { host: flags.host } : {}),
          ...(flags.port !== undefined ? { port: flags.port } : {}),
          ...(flags.db !== undefined ? { db: flags.db } : {}),
          ...(flags.slos !== undefined ? { slos: flags.slos } : {}),
          ...(flags.metricsPublic ? { metricsPublic: true } : {}),
          ...(flags.ingestWorkers !== undefined ? { ingestWorkers: flags.ingestWorkers } : {}),
        },
        ...(flags.logFormat !== undefined ? { log: { format: flags.logFormat } } : {}),
      })
      const log = makeLogger(flags.logLevel, cfg.log.format)
      const claim = { host: cfg.collector.host, port: cfg.collector.port, flag: '--port' }
      await assertPortsFree([claim]) // before the store opens: a busy port prints one line and starts nothing
      const running = await listening(claim, () => runCollector(cfg, log, { plugins }))
      io.out(`tailguard collector listening on ${running.url} (store: ${running.store.dialect})`)
      await untilSignal(running.stop, log)
    })
}
