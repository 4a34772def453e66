import type { FastifyBaseLogger } from 'fastify'
import type { AgentConfig } from '../collector/index.js'
import { startAgent } from './agent.js'
import type { AgentDeps, RunningAgent } from './agent.js'

const LOOPBACK = /^(127\.|::1$|localhost$)/

/**
 * Starts the agent described by a validated config section: listener, sources, shipper. Used by
 * `tailguard agent` and `tailguard start`.
 *
 * @example const agent = await runAgent(config.agent, logger)
 */
export async function runAgent(
  cfg: Readonly<AgentConfig>,
  logger: FastifyBaseLogger,
  deps: AgentDeps = {},
): Promise<RunningAgent> {
  if (!cfg.otlp.token && !LOOPBACK.test(cfg.otlp.host))
    logger.warn(
      `OTLP receiver on ${cfg.otlp.host} accepts spans without a token: set TAILGUARD_OTLP_TOKEN (agent.otlp.token)`,
    )
  return startAgent(
    {
      id: cfg.id,
      node: cfg.node,
      collectorUrl: cfg.collector,
      token: cfg.token,
      intervalMs: cfg.intervalMs,
      spoolDir: cfg.spoolDir,
      spoolMaxBytes: cfg.spoolMaxBytes,
      http: { host: cfg.otlp.host, port: cfg.otlp.port, token: cfg.otlp.token },
    },
    { logger, ...deps },
  )
}
