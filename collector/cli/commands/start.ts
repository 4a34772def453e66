import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { isAbsolute, join, resolve } from 'node:path'
import type { RegisterCommand } from '../command.js'
import { loadConfig, makeLogger, portArg, untilSignal, withCommonOptions } from '../options.js'
import { runCollector } from '../../run.js'
import { runAgent } from '../../../agent/index.js'
import type { TailguardConfig } from '../../config/index.js'
import { DEMO_SLOS_YAML, createDemoFleet, createSdkEmitter, startDemoReplay } from '../../../agent/index.js'
import type { DemoArrival } from '../../../agent/index.js'
import {
  AZURE_TRACE_ATTRIBUTION,
  DEFAULT_TRACE_FILE,
  findSharedTrace,
  parseAzureTrace,
} from '../../../controller/index.js'
import { CliError } from '../command.js'

interface StartFlags {
  config?: string
  logLevel: string
  dataDir?: string
  host?: string
  port?: number
  otlpPort?: number
  demo: boolean
  demoSpeed?: string
  demoTrace?: string
  slos?: string
}

interface LocalTokens {
  readonly admin: string
  readonly read: string
  readonly agent: string
}

/**
 * Reads `<dataDir>/tokens.json`, creating it (mode 0600) with fresh random tokens on first run.
 *
 * @example const { read } = ensureTokens('.tailguard')
 */
export function ensureTokens(dataDir: string): LocalTokens {
  const file = join(dataDir, 'tokens.json')
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as LocalTokens
  const make = () => randomBytes(24).toString('base64url')
  const tokens = { admin: make(), read: make(), agent: make() }
  writeFileSync(file, JSON.stringify(tokens, null, 2) + '\n', { mode: 0o600 })
  chmodSync(file, 0o600)
  return tokens
}

/** `tailguard start`: collector + local agent (+ demo fleet) in one process on an embedded SQLite file. */
export const registerStart: RegisterCommand = (program, io) => {
  withCommonOptions(
    program
      .command('start')
      .description(
        'Run the whole plane in one process: collector, dashboard and a local agent on an embedded SQLite file, with a demo fleet',
      )
      .option('--data-dir <dir>', 'where the SQLite file, tokens and spool live (default ./.tailguard)')
      .option('--host <host>', 'address for the collector and dashboard (default 127.0.0.1)')
      .option('--port <n>', 'collector and dashboard port (default 7070)', portArg('--port'))
      .option('--otlp-port <n>', 'local agent OTLP/HTTP port (default 4318)', portArg('--otlp-port'))
      .option(
        '--slos <path>',
        'SLO definitions: a file or a folder (tailguard YAML or OpenSLO), reloaded on change',
      )
      .option('--no-demo', 'do not run the demo fleet')
      .option(
        '--demo-speed <x>',
        'how many times faster than real time the demo replays its trace (default 10)',
      )
      .option(
        '--demo-trace <file>',
        'trace CSV for the demo (default ../shared/traces/azure-llm-2023-conv.csv when present)',
      ),
    // One process for a person at a terminal: the lines printed below, and only warnings from the log.
    'warn',
  )
    .addHelpText(
      'after',
      '\nOn first run, tokens are generated into <data-dir>/tokens.json and the dashboard URL is printed with a read token.',
    )
    .action(async (flags: StartFlags) => {
      const base = loadConfig(flags.config, {
        start: {
          ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}),
          demo: flags.demo,
          ...(flags.demoSpeed !== undefined ? { demoSpeed: Number(flags.demoSpeed) } : {}),
          ...(flags.demoTrace !== undefined ? { demoTrace: flags.demoTrace } : {}),
        },
        collector: {
          ...(flags.host !== undefined ? { host: flags.host } : {}),
          ...(flags.port !== undefined ? { port: flags.port } : {}),
          ...(flags.slos !== undefined ? { slos: flags.slos } : {}),
        },
        agent: { otlp: { ...(flags.otlpPort !== undefined ? { port: flags.otlpPort } : {}) } },
      })
      const dataDir = resolve(base.start.dataDir)
      mkdirSync(dataDir, { recursive: true })
      const tokens = ensureTokens(dataDir)
      let slos = base.collector.slos
      if (slos === null && base.start.demo) {
        slos = join(dataDir, 'demo-slos.yaml')
        if (!existsSync(slos)) writeFileSync(slos, DEMO_SLOS_YAML)
      }
      const db =
        base.collector.db.includes('://') || isAbsolute(base.collector.db)
          ? base.collector.db
          : join(dataDir, base.collector.db)
      const cfg: TailguardConfig = {
        ...base,
        collector: {
          ...base.collector,
          db,
          slos,
          apiTokens: [
            ...base.collector.apiTokens,
            { token: tokens.admin, scope: 'admin', name: 'start:admin' },
            { token: tokens.read, scope: 'read', name: 'start:read' },
          ],
          agentTokens: [...base.collector.agentTokens, { token: tokens.agent, name: 'start:agent' }],
        },
      }
      const log = makeLogger(flags.logLevel)
      const collector = await runCollector(cfg, log)
      const agent = await runAgent(
        {
          ...cfg.agent,
          collector: collector.url,
          token: tokens.agent,
          spoolDir: cfg.agent.spoolDir ?? join(dataDir, 'spool'),
        },
        log,
      )
      let demo: { stop(): void } | null = null
      if (cfg.start.demo) {
        const { arrivals, source } = loadDemoArrivals(cfg.start.demoTrace)
        demo = startDemoReplay({
          arrivals,
          speed: cfg.start.demoSpeed,
          emit: createSdkEmitter(agent.recorder),
        })
        io.out(
          `demo fleet: services demo-chat and demo-vision, replaying ${source} at ${cfg.start.demoSpeed}x (--no-demo turns it off)`,
        )
      }
      io.out(`tailguard is running (store: ${db})`)
      io.out(`  dashboard:  ${collector.url}/#token=${tokens.read}`)
      io.out(`  API:        ${collector.url}/api/v1  (tokens in ${join(dataDir, 'tokens.json')})`)
      io.out(`  OTLP/HTTP:  http://${agent.address?.host}:${agent.address?.port}/v1/traces`)
      await untilSignal(async () => {
        demo?.stop()
        await agent.stop()
        await collector.stop()
      }, log)
    })
}

/**
 * The demo's LLM arrivals: the given trace, else the Azure conversation trace in ../shared/traces, else a
 * synthetic Poisson stream (with a note saying so).
 */
function loadDemoArrivals(tracePath: string | null): { arrivals: DemoArrival[]; source: string } {
  const path = tracePath ?? findSharedTrace(DEFAULT_TRACE_FILE)
  if (!path) {
    const arrivals = createDemoFleet({ seed: 7, node: 'demo' }).syntheticArrivals(5, 3_600_000)
    return { arrivals, source: 'synthetic Poisson arrivals (5/s; no trace file found)' }
  }
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new CliError(
      `--demo-trace ${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    )
  }
  const parsed = parseAzureTrace(text)
  if (!parsed.ok) throw new CliError(`${path}:${parsed.error.line}: ${parsed.error.message}`)
  const t = parsed.trace
  const arrivals: DemoArrival[] = []
  for (let i = 0; i < t.arrivalMs.length; i++)
    arrivals.push({
      offsetMs: t.arrivalMs[i]!,
      contextTokens: t.inputTokens[i]!,
      generatedTokens: t.outputTokens[i]!,
    })
  const attribution = path.endsWith(DEFAULT_TRACE_FILE) ? ` — ${AZURE_TRACE_ATTRIBUTION}` : ''
  return { arrivals, source: `${path} (${arrivals.length} requests)${attribution}` }
}
