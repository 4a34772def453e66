import {
  CliError,
  assertPortsFree,
  intArg,
  listening,
  loadConfig,
  makeLogger,
  portArg,
  untilSignal,
  withCommonOptions,
} from '../../collector/index.js'
import type { RegisterCommand } from '../../collector/index.js'
import { otlpGrpcPortOf, runAgent } from '../run.js'
import { parseScrapeArg } from '../sources/scrape/source.js'

interface AgentFlags {
  config?: string
  logLevel: string
  logFormat?: 'auto' | 'pretty' | 'json'
  collector?: string
  otlpPort?: number
  otlpGrpcPort?: number
  otlpGrpc: boolean
  otlpHost?: string
  id?: string
  node?: string
  intervalMs?: number
  spoolDir?: string
  nvml: boolean
  dcgmUrl?: string
  gpuPeriodMs?: number
  proxyPort?: number
  proxyHost?: string
  upstream?: string[]
  scrape: string[]
}

/** Collects a repeatable flag's values. */
const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value]

/** `tailguard agent`: the per-node agent (OTLP/HTTP receiver, sources, interval reports to the collector). */
export const registerAgent: RegisterCommand = (program, io) => {
  withCommonOptions(
    program
      .command('agent')
      .description(
        'Run the node agent: OTLP/HTTP and OTLP/gRPC receivers, GPU sources, HDR histograms, interval reports to the collector',
      )
      .option('--collector <url>', 'collector base URL (default http://127.0.0.1:7070)')
      .option(
        '--otlp-port <n>',
        'OTLP/HTTP port for /v1/traces, also serving /metrics (default 4318)',
        portArg('--otlp-port'),
      )
      .option(
        '--otlp-grpc-port <n>',
        'OTLP/gRPC port (default 4317; a free port when --otlp-port is 0)',
        portArg('--otlp-grpc-port'),
      )
      .option('--no-otlp-grpc', 'do not serve OTLP over gRPC')
      .option('--otlp-host <host>', 'address for the OTLP listeners (default 127.0.0.1)')
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
      )
      .option(
        '--proxy-port <n>',
        'run the inline proxy on this port, in front of the --upstream model servers',
        portArg('--proxy-port'),
      )
      .option('--proxy-host <host>', 'address for the proxy (default 127.0.0.1)')
      .option(
        '--upstream <url>',
        'a model server behind the proxy, e.g. http://127.0.0.1:8000 (repeatable)',
        collect,
      )
      .option(
        '--scrape <target>',
        'scrape a model server: URL (kind detected) or vllm=URL, triton=URL, tgi=URL, sglang=URL, dcgm=URL; repeatable',
        (value: string, previous: string[]) => [...previous, value],
        [] as string[],
      ),
  )
    .addHelpText(
      'after',
      '\nThe agent token comes from TAILGUARD_AGENT_TOKEN (or agent.token in the config file); OTLP exporters authenticate with TAILGUARD_OTLP_TOKEN when set; the setpoints API (/v1/setpoints, /v1/upstreams) with TAILGUARD_AGENT_ADMIN_TOKEN.\nExample: tailguard agent --collector http://collector:7070 --otlp-port 4318 --spool-dir /var/lib/tailguard/spool --scrape vllm=http://127.0.0.1:8000/metrics\nProxy:   tailguard agent --proxy-port 8080 --upstream http://127.0.0.1:8000',
    )
    .action(async (flags: AgentFlags) => {
      const cfg = loadConfig(flags.config, {
        agent: {
          ...(flags.collector !== undefined ? { collector: flags.collector } : {}),
          ...(flags.id !== undefined ? { id: flags.id } : {}),
          ...(flags.node !== undefined ? { node: flags.node } : {}),
          ...(flags.intervalMs !== undefined ? { intervalMs: flags.intervalMs } : {}),
          ...(flags.spoolDir !== undefined ? { spoolDir: flags.spoolDir } : {}),
          ...grpcPortFlag(flags),
          gpu: {
            ...(flags.nvml === false ? { nvml: false } : {}),
            ...(flags.dcgmUrl !== undefined ? { dcgmUrl: flags.dcgmUrl } : {}),
            ...(flags.gpuPeriodMs !== undefined ? { periodMs: flags.gpuPeriodMs } : {}),
          },
          otlp: {
            ...(flags.otlpPort !== undefined ? { port: flags.otlpPort } : {}),
            ...(flags.otlpHost !== undefined ? { host: flags.otlpHost } : {}),
          },
          proxy: proxyFlags(flags),
        },
        ...(flags.logFormat !== undefined ? { log: { format: flags.logFormat } } : {}),
      })
      if (cfg.agent.proxy.port !== null && cfg.agent.proxy.upstreams.length === 0)
        throw new CliError(
          '--proxy-port needs at least one --upstream URL (or agent.proxy.upstreams in the config file)',
        )
      if (cfg.agent.proxy.port === null && cfg.agent.proxy.upstreams.length > 0)
        throw new CliError(
          `${flags.upstream?.length ? '--upstream' : 'agent.proxy.upstreams'} needs --proxy-port, the port the proxy listens on (or agent.proxy.port in the config file)`,
        )
      const targets = flags.scrape.map((text) => {
        const t = parseScrapeArg(text)
        if (typeof t === 'string') throw new CliError(`--scrape: ${t}`)
        return t
      })
      if (!cfg.agent.token)
        throw new CliError('agent token missing: set TAILGUARD_AGENT_TOKEN or agent.token in the config file')
      const log = makeLogger(flags.logLevel, cfg.log.format)
      const claim = { host: cfg.agent.otlp.host, port: cfg.agent.otlp.port, flag: '--otlp-port' }
      const grpcPort = otlpGrpcPortOf(cfg.agent)
      await assertPortsFree([
        claim,
        ...(grpcPort === null
          ? []
          : [{ host: cfg.agent.otlp.host, port: grpcPort, flag: '--otlp-grpc-port' }]),
        ...(cfg.agent.proxy.port === null
          ? []
          : [{ host: cfg.agent.proxy.host, port: cfg.agent.proxy.port, flag: '--proxy-port' }]),
      ]) // before any source starts
      const agent = await listening(claim, () =>
        runAgent({ ...cfg.agent, scrape: [...cfg.agent.scrape, ...targets] }, log),
      )
      const grpc = agent.grpcAddress
        ? `, OTLP/gRPC on ${agent.grpcAddress.host}:${agent.grpcAddress.port}`
        : ''
      io.out(
        `tailguard agent ${cfg.agent.id} sending to ${cfg.agent.collector}; OTLP/HTTP on http://${agent.address?.host}:${agent.address?.port}/v1/traces${grpc}`,
      )
      if (agent.proxyAddress)
        io.out(
          `proxy on http://${agent.proxyAddress.host}:${agent.proxyAddress.port} -> ${cfg.agent.proxy.upstreams.join(', ')}; setpoints API on http://${agent.address?.host}:${agent.address?.port}/v1/setpoints${cfg.agent.adminToken ? '' : ' (refused: no TAILGUARD_AGENT_ADMIN_TOKEN)'}`,
        )
      await untilSignal(agent.stop, log)
    })
}

/**
 * The proxy part of the config from `--proxy-port`, `--proxy-host` and `--upstream` (flags replace the
 * config file's upstream list).
 *
 * @example proxyFlags({ proxyPort: 8080, upstream: ['http://127.0.0.1:8000'] }) // { port: 8080, upstreams: [...] }
 */
export function proxyFlags(flags: { proxyPort?: number; proxyHost?: string; upstream?: string[] }): {
  port?: number
  host?: string
  upstreams?: string[]
} {
  return {
    ...(flags.proxyPort !== undefined ? { port: flags.proxyPort } : {}),
    ...(flags.proxyHost !== undefined ? { host: flags.proxyHost } : {}),
    ...(flags.upstream !== undefined ? { upstreams: flags.upstream } : {}),
  }
}

/**
 * The `agent.otlpGrpcPort` that `--otlp-grpc-port` and `--no-otlp-grpc` ask for (nothing when neither is given).
 *
 * @example grpcPortFlag({ otlpGrpc: false }) // { otlpGrpcPort: null }
 */
export function grpcPortFlag(flags: { otlpGrpcPort?: number; otlpGrpc?: boolean }): {
  otlpGrpcPort?: number | null
} {
  if (flags.otlpGrpc === false) return { otlpGrpcPort: null }
  return flags.otlpGrpcPort !== undefined ? { otlpGrpcPort: flags.otlpGrpcPort } : {}
}
