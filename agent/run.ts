import type { FastifyBaseLogger } from 'fastify'
import type { AgentConfig } from '../collector/index.js'
import { startAgent } from './agent.js'
import type { AgentDeps, RunningAgent } from './agent.js'
import { createGpuCollector, createGpuSources, createPidResolver } from './gpu/index.js'

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
  const gpu =
    deps.gpu ??
    createGpuCollector({
      sources: createGpuSources({
        nvml: cfg.gpu.nvml,
        ...(cfg.gpu.nvmlLibrary ? { nvmlLibrary: cfg.gpu.nvmlLibrary } : {}),
        ...(cfg.gpu.dcgmUrl ? { dcgmUrl: cfg.gpu.dcgmUrl } : {}),
        periodMs: cfg.gpu.periodMs,
        log: (line) => logger.info(line),
      }),
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
    { logger, ...deps, gpu },
  )
}
