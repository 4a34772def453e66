import type { FastifyBaseLogger } from 'fastify'
import type { AgentConfig } from '../collector/index.js'
import { startAgent } from './agent.js'
import type { AgentDeps, RunningAgent } from './agent.js'
import { createGpuCollector, createGpuSources, createPidResolver } from './gpu/index.js'
import { otlpReceiver } from './sources/otlp/receiver.js'
import { createSpanMapper } from './sources/otlp/mapping.js'
import { Counter } from 'prom-client'

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
    {
      logger,
      ...deps,
      gpu,
      plugins: [
        async (app, { recorder, registry }) => {
          const spans = new Counter({
            name: 'tailguard_agent_otlp_spans_total',
            help: 'OTLP spans received, by outcome',
            labelNames: ['outcome'] as const,
            registers: [registry],
          })
          const requests = new Counter({
            name: 'tailguard_agent_otlp_requests_total',
            help: 'OTLP export requests, by HTTP status and encoding',
            labelNames: ['status', 'encoding'] as const,
            registers: [registry],
          })
          await app.register(otlpReceiver, {
            sink: recorder,
            mapping: createSpanMapper(cfg.mapping),
            bodyLimitBytes: cfg.otlp.bodyLimitBytes,
            ...(cfg.otlp.token ? { token: cfg.otlp.token } : {}),
            onExport: (r) => {
              requests.inc({ status: String(r.statusCode), encoding: r.encoding ?? 'unknown' })
              spans.inc({ outcome: 'accepted' }, Math.max(0, r.spans - r.refused))
              if (r.refused > 0) spans.inc({ outcome: 'refused' }, r.refused)
            },
          })
        },
        ...(deps.plugins ?? []),
      ],
    },
  )
}
