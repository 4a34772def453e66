import type { RegisterCommand } from '../command.js'
import { CliError } from '../command.js'
import { intArg, loadConfig, makeLogger, portArg, untilSignal, withCommonOptions } from '../options.js'
import { runAgent } from '../../../agent/index.js'

interface AgentFlags {
  config?: string
  logLevel: string
  collector?: string
  otlpPort?: number
  otlpHost?: string
  id?: string
  node?: string
  intervalMs?: number
  spoolDir?: string
  nvml: boolean
  dcgmUrl?: string
  gpuPeriodMs?: number
}

/** `tailguard agent`: the per-node agent (OTLP/HTTP receiver, sources, interval reports to the collector). */
export const registerAgent: RegisterCommand = (program, io) => {
  withCommonOptions(
    program
      .command('agent')
      .description(
        'Run the node agent: OTLP/HTTP receiver, GPU sources, HDR histograms, interval reports to the collector',
      )
      .option('--collector <url>', 'collector base URL (default http://127.0.0.1:7070)')
      .option(
        '--otlp-port <n>',
        'OTLP/HTTP port for /v1/traces, also serving /metrics (default 4318)',
        portArg('--otlp-port'),
      )
      .option('--otlp-host <host>', 'address for the OTLP listener (default 127.0.0.1)')
      .option('--id <id>', 'agent id (default: the node name)')
      .option('--node <name>', 'node name label (default: the host name)')
      .option('--interval-ms <ms>', 'report interval in ms (default 5000)', intArg('--interval-ms', 100))
      .option('--spool-dir <dir>', 'folder for reports not yet acknowledged (default: memory only)')
      .option('--no-nvml', 'do not read GPUs through NVML (libnvidia-ml.so.1, or TAILGUARD_NVML_LIBRARY)')
      .option('--dcgm-url <url>', 'scrape a DCGM exporter, e.g. http://127.0.0.1:9400/metrics')
      .option(
        '--gpu-period-ms <ms>',
        'GPU sampling period in ms (default 1000)',
        intArg('--gpu-period-ms', 100),
      ),
  )
    .addHelpText(
      'after',
      '\nThe agent token comes from TAILGUARD_AGENT_TOKEN (or agent.token in the config file); OTLP exporters authenticate with TAILGUARD_OTLP_TOKEN when set.\nExample: tailguard agent --collector http://collector:7070 --otlp-port 4318 --spool-dir /var/lib/tailguard/spool',
    )
    .action(async (flags: AgentFlags) => {
      const cfg = loadConfig(flags.config, {
        agent: {
          ...(flags.collector !== undefined ? { collector: flags.collector } : {}),
          ...(flags.id !== undefined ? { id: flags.id } : {}),
          ...(flags.node !== undefined ? { node: flags.node } : {}),
          ...(flags.intervalMs !== undefined ? { intervalMs: flags.intervalMs } : {}),
          ...(flags.spoolDir !== undefined ? { spoolDir: flags.spoolDir } : {}),
          gpu: {
            ...(flags.nvml === false ? { nvml: false } : {}),
            ...(flags.dcgmUrl !== undefined ? { dcgmUrl: flags.dcgmUrl } : {}),
            ...(flags.gpuPeriodMs !== undefined ? { periodMs: flags.gpuPeriodMs } : {}),
          },
          otlp: {
            ...(flags.otlpPort !== undefined ? { port: flags.otlpPort } : {}),
            ...(flags.otlpHost !== undefined ? { host: flags.otlpHost } : {}),
          },
        },
      })
      if (!cfg.agent.token)
        throw new CliError('no agent token: set TAILGUARD_AGENT_TOKEN or agent.token in the config file')
      const log = makeLogger(flags.logLevel)
      const agent = await runAgent(cfg.agent, log)
      io.out(
        `tailguard agent ${cfg.agent.id} sending to ${cfg.agent.collector}; OTLP/HTTP on http://${agent.address?.host}:${agent.address?.port}/v1/traces`,
      )
      await untilSignal(agent.stop, log)
    })
}
