import {
  CliError,
  loadConfig,
  makeLogger,
  untilSignal,
  withCommonOptions,
  parseDurationMs,
  portArg,
  assertPortsFree,
} from '../../collector/index.js'
import type { RegisterCommand } from '../../collector/index.js'
import { runController } from '../live/run.js'
import { createRecommendationBoard } from '../autoscale/recommendation.js'
import { DEFAULT_KEDA_PORT } from '../autoscale/keda-server.js'
import { DEFAULT_CONTROLLER_HTTP_PORT } from '../autoscale/http.js'
import { DEFAULT_EXTERNAL_METRICS_PORT } from '../autoscale/external-metrics.js'
import { autoscalePortClaims, autoscaleTokens, startAutoscaleFronts } from './autoscale-fronts.js'
import type { AutoscaleFronts } from './autoscale-fronts.js'

interface ControllerFlags {
  config?: string
  logLevel: string
  logFormat?: 'auto' | 'pretty' | 'json'
  db?: string
  collector?: string
  interval?: string
  holder?: string
  kedaPort?: number
  keda: boolean
  httpPort?: number
  http: boolean
  host?: string
  externalMetricsPort?: number
  tlsCert?: string
  tlsKey?: string
  tlsClientCa?: string
}

/**
 * `tailguard controller`: the live controller for the targets of `controllers:` in the config file. It keeps
 * leases and decisions in the database the collectors share (`--db`, default the config's `collector.db`)
 * and reads error budgets from a collector's SLO engine (`--collector`).
 *
 * @example tailguard controller -c tailguard.yaml --db postgres://postgres@127.0.0.1:5432/tailguard --collector http://127.0.0.1:7070
 */
export const registerController: RegisterCommand = (program, io) => {
  withCommonOptions(
    program
      .command('controller')
      .description(
        'Run the live controller: observe the targets in controllers:, decide with their policy, store every decision and (in enforce mode) act through the actuators',
      )
      .option(
        '--db <url>',
        "the collectors' database (SQLite path or postgres:// URL); default collector.db of the config",
      )
      .option('--collector <url>', 'a collector whose SLO engine gives error budgets (GET /api/v1/slos)')
      .option('--interval <duration>', 'control interval, e.g. 5s (default controller.intervalMs, 5 s)')
      .option('--holder <name>', "this process's name in leases and decisions (default host:pid:random)")
      .option('--host <host>', 'address the autoscaler APIs listen on (default 0.0.0.0)')
      .option(
        '--keda-port <n>',
        `KEDA external scaler (gRPC) port (default ${DEFAULT_KEDA_PORT})`,
        portArg('--keda-port'),
      )
      .option('--no-keda', 'do not serve the KEDA external scaler')
      .option(
        '--http-port <n>',
        `JSON autoscale API port: GET /api/v1/autoscale/{service} (default ${DEFAULT_CONTROLLER_HTTP_PORT})`,
        portArg('--http-port'),
      )
      .option('--no-http', 'do not serve the JSON autoscale API')
      .option(
        '--external-metrics-port <n>',
        `Kubernetes external metrics API port, HTTPS (default ${DEFAULT_EXTERNAL_METRICS_PORT}; needs --tls-cert and --tls-key)`,
        portArg('--external-metrics-port'),
      )
      .option('--tls-cert <file>', 'PEM certificate for the external metrics API and the KEDA scaler')
      .option('--tls-key <file>', 'PEM key of --tls-cert')
      .option(
        '--tls-client-ca <file>',
        "CA whose client certificates are accepted without a token (the API server's front-proxy CA)",
      ),
  )
    .addHelpText(
      'after',
      '\nSeveral controllers may run on one PostgreSQL: each target has one leader at a time (a lease row with a fencing token).\nTokens: TAILGUARD_READ_TOKEN (or TAILGUARD_API_TOKEN) for --collector; TAILGUARD_AGENT_ADMIN_TOKEN for agent actuators.\nExample: tailguard controller -c tailguard.yaml --db postgres://postgres@127.0.0.1:5432/tailguard --collector http://127.0.0.1:7070',
    )
    .action(async (flags: ControllerFlags) => {
      let intervalMs: number | undefined
      if (flags.interval !== undefined) {
        intervalMs = parseDurationMs(flags.interval)
        if (intervalMs === undefined || intervalMs < 100)
          throw new CliError(
            `--interval: expected a duration of at least 100ms like 5s, got '${flags.interval}'`,
          )
      }
      const cfg = loadConfig(flags.config, {
        ...(flags.db !== undefined ? { collector: { db: flags.db } } : {}),
        controller: {
          ...(intervalMs !== undefined ? { intervalMs } : {}),
          ...(flags.collector !== undefined ? { collector: flags.collector } : {}),
        },
        ...(flags.logFormat !== undefined ? { log: { format: flags.logFormat } } : {}),
      })
      if (cfg.controllers.length === 0)
        throw new CliError(
          `no targets: add a controllers: section to ${flags.config ?? 'the config file (--config)'} (see docs/controller.md)`,
        )
      const log = makeLogger(flags.logLevel, cfg.log.format)
      const token = process.env['TAILGUARD_READ_TOKEN'] ?? process.env['TAILGUARD_API_TOKEN']
      await assertPortsFree(autoscalePortClaims(flags, autoscaleTokens(process.env))) // before anything starts
      const board = createRecommendationBoard()
      let running
      try {
        running = await runController(cfg, log, {
          ...(cfg.controller.collector
            ? {
                budgets: {
                  kind: 'http' as const,
                  url: cfg.controller.collector,
                  ...(token ? { token } : {}),
                },
              }
            : {}),
          ...(flags.holder ? { holder: flags.holder } : {}),
          board,
        })
      } catch (err) {
        throw new CliError((err as Error).message)
      }
      let fronts: AutoscaleFronts
      try {
        fronts = await startAutoscaleFronts(flags, board, autoscaleTokens(process.env))
      } catch (err) {
        await running.stop()
        throw err
      }
      io.out(
        `tailguard controller ${running.controller.holder}: ${running.targets.length} target(s) (${running.targets.join(', ')}), every ${cfg.controller.intervalMs / 1000} s`,
      )
      for (const line of fronts.lines) io.out(`  ${line}`)
      await untilSignal(async () => {
        await fronts.close()
        await running.stop()
      }, log)
    })
}
