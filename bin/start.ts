import { Option } from 'commander'
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  CliError,
  assertPortsFree,
  listening,
  loadConfig,
  makeLogger,
  intArg,
  numberArg,
  portArg,
  runCollector,
  signalLatch,
  withCommonOptions,
} from '../collector/index.js'
import type {
  ControllerTargetConfig,
  RegisterCommand,
  StartConfig,
  TailguardConfig,
} from '../collector/index.js'
import {
  DEMO_SLOS_YAML,
  createSdkEmitter,
  createSetpointsGroup,
  createSourceSet,
  demoControllerTarget,
  grpcPortFlag,
  isLoopbackHost,
  otlpGrpcPortOf,
  proxyFlags,
  runAgent,
  startDemoReplay,
  startServingDemo,
} from '../agent/index.js'
import type { DemoArrival, ServingDemo } from '../agent/index.js'
import {
  AZURE_TRACE_ATTRIBUTION,
  DEFAULT_KEDA_PORT,
  createAutoscaleRoutes,
  createWhatifRoutes,
  createRecommendationBoard,
  createReplicaSetActuator,
  parseAzureTrace,
  runController,
  shippedTracePath,
  startKedaScaler,
} from '../controller/index.js'
import type { RunningController, RunningKedaScaler } from '../controller/index.js'

interface StartFlags {
  config?: string
  logLevel: string
  logFormat?: 'auto' | 'pretty' | 'json'
  dataDir?: string
  host?: string
  port?: number
  otlpPort?: number
  otlpGrpcPort?: number
  otlpGrpc: boolean
  demo: boolean
  demoSpeed?: string
  demoTrace?: string
  demoController?: string
  demoLoad?: number
  demoStepAfter?: number
  demoStepHold?: number
  demoStep?: number
  slos?: string
  proxyPort?: number
  upstream?: string[]
  kedaPort?: number
  keda: boolean
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
        '--otlp-grpc-port <n>',
        'local agent OTLP/gRPC port (default 4317; a free port when --otlp-port is 0)',
        portArg('--otlp-grpc-port'),
      )
      .option('--no-otlp-grpc', 'do not serve OTLP over gRPC')
      .option(
        '--slos <path>',
        'SLO definitions: a file or a folder (tailguard YAML or OpenSLO), reloaded on change',
      )
      .option(
        '--proxy-port <n>',
        "run the local agent's proxy on this port, in front of --upstream",
        portArg('--proxy-port'),
      )
      .option(
        '--upstream <url>',
        'a model server behind the proxy (repeatable)',
        (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
      )
      .option(
        '--keda-port <n>',
        `KEDA external scaler (gRPC) port (default ${DEFAULT_KEDA_PORT}; any free port when --port is 0)`,
        portArg('--keda-port'),
      )
      .option('--no-keda', 'do not serve the KEDA external scaler')
      .option('--no-demo', 'do not run the demo fleet')
      .option(
        '--demo-speed <x>',
        'how many times faster than real time the demo replays its trace (default 10)',
      )
      .option(
        '--demo-trace <file>',
        'trace CSV for the demo (default: the shipped controller/sim/traces/azure-llm-2023-conv.csv)',
      )
      .addOption(
        new Option(
          '--demo-controller <mode>',
          'the live controller on the serving demo (demo-llm): enforce moves its admission caps, batching and replicas, observe only decides (default enforce)',
        ).choices(['enforce', 'observe', 'off']),
      )
      .option(
        '--demo-load <fraction>',
        "the serving demo's base load as a fraction of what its two replicas serve flat out, measured on this machine at start (default 0.15)",
        numberArg('--demo-load', 0, 2),
      )
      .option(
        '--demo-step-after <s>',
        "seconds before the serving demo's load steps up (--demo-step times; again after each fall back); 0: never (default 180)",
        intArg('--demo-step-after', 0),
      )
      .option(
        '--demo-step-hold <s>',
        'seconds the stepped-up load lasts (default 300)',
        intArg('--demo-step-hold', 1),
      )
      .option(
        '--demo-step <times>',
        "how many times the base load the serving demo's step sends (default 3)",
        (v: string): number => {
          const n = Number(v)
          if (v.trim() === '' || !(n >= 1 && n <= 20))
            throw new CliError(`--demo-step: expected a number from 1 to 20, got '${v}'`)
          return n
        },
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
          ...(flags.demoController !== undefined
            ? { demoController: flags.demoController as StartConfig['demoController'] }
            : {}),
          ...(flags.demoLoad !== undefined ? { demoLoad: flags.demoLoad } : {}),
          ...(flags.demoStepAfter !== undefined ? { demoStepAfterS: flags.demoStepAfter } : {}),
          ...(flags.demoStepHold !== undefined ? { demoStepHoldS: flags.demoStepHold } : {}),
          ...(flags.demoStep !== undefined ? { demoStepMultiplier: flags.demoStep } : {}),
        },
        collector: {
          ...(flags.host !== undefined ? { host: flags.host } : {}),
          ...(flags.port !== undefined ? { port: flags.port } : {}),
          ...(flags.slos !== undefined ? { slos: flags.slos } : {}),
        },
        agent: {
          ...grpcPortFlag(flags),
          otlp: { ...(flags.otlpPort !== undefined ? { port: flags.otlpPort } : {}) },
          proxy: proxyFlags(flags),
        },
        ...(flags.logFormat !== undefined ? { log: { format: flags.logFormat } } : {}),
      })
      // A controller's `process` actuator fills the set with the replicas it starts (until then the proxy
      // answers 503 "no active upstream").
      const filled = base.controllers.some((t) =>
        t.actuators.some((a) => a.type === 'process' && a.agentUrl !== undefined),
      )
      if (base.agent.proxy.port === null && (flags.upstream?.length ?? 0) > 0)
        throw new CliError(
          '--upstream needs --proxy-port, the port the proxy listens on (or agent.proxy.port in the config file)',
        )
      if (base.agent.proxy.port !== null && base.agent.proxy.upstreams.length === 0 && !filled)
        throw new CliError(
          '--proxy-port needs at least one --upstream URL (or agent.proxy.upstreams in the config file, or a controller whose process actuator fills it: agentUrl)',
        )
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
      const log = makeLogger(flags.logLevel, cfg.log.format)
      // Everything that can fail fast does so before anything starts: the demo trace, then the ports.
      const demoArrivals = cfg.start.demo
        ? loadDemoArrivals(
            cfg.start.demoTrace,
            flags.demoTrace !== undefined
              ? '--demo-trace'
              : `${flags.config ?? 'config file'}: start.demoTrace`,
          )
        : null
      const collectorPort = { host: cfg.collector.host, port: cfg.collector.port, flag: '--port' }
      const otlpPort = { host: cfg.agent.otlp.host, port: cfg.agent.otlp.port, flag: '--otlp-port' }
      const grpcPort = otlpGrpcPortOf(cfg.agent)
      const kedaPort = flags.keda
        ? {
            host: cfg.collector.host,
            port: flags.kedaPort ?? (cfg.collector.port === 0 ? 0 : DEFAULT_KEDA_PORT),
            flag: '--keda-port',
          }
        : null
      await assertPortsFree([
        collectorPort,
        otlpPort,
        ...(kedaPort ? [kedaPort] : []),
        ...(grpcPort === null
          ? []
          : [{ host: cfg.agent.otlp.host, port: grpcPort, flag: '--otlp-grpc-port' }]),
        ...(cfg.agent.proxy.port === null
          ? []
          : [{ host: cfg.agent.proxy.host, port: cfg.agent.proxy.port, flag: '--proxy-port' }]),
      ])
      // The serving demo's proxies are made after the agent (they record into its recorder); their gauges
      // join the agent's reports through this indirection.
      let serving: ServingDemo | null = null
      // The serving demo's proxies join these setpoints, which the agent serves on its setpoints API (when it
      // runs no proxy of its own): the demo controller moves them as it would a sidecar's.
      const demoSetpoints = cfg.agent.proxy.port === null ? createSetpointsGroup() : null
      // Each demo replica's model server is scraped as it comes up (and no longer once it goes).
      const demoScrapes = createSourceSet('demo model servers')
      // Autoscalers read the controller's recommendations from one board: the JSON API on the collector's
      // port and the KEDA external scaler.
      const board = createRecommendationBoard()
      const collector = await listening(collectorPort, () =>
        runCollector(cfg, log, { plugins: [createAutoscaleRoutes(board), createWhatifRoutes()] }),
      )
      // The files shutdown must leave behind: the data directory and, for SQLite, the store file this process
      // opened (by inode: a file recreated at the same path is not the one written to). Taken as soon as the store
      // is open: once the addresses are printed, a script may remove the file at once.
      const storeFile = db.includes('://') ? null : db
      const storeIno = storeFile ? inodeOf(storeFile) : null
      let agent: Awaited<ReturnType<typeof runAgent>>
      try {
        agent = await listening(otlpPort, () =>
          runAgent(
            {
              ...cfg.agent,
              collector: collector.url,
              token: tokens.agent,
              spoolDir: cfg.agent.spoolDir ?? join(dataDir, 'spool'),
              adminToken: cfg.agent.adminToken ?? tokens.admin,
            },
            log,
            {
              signals: () => serving?.signals() ?? [],
              sources: [demoScrapes],
              ...(demoSetpoints ? { setpoints: demoSetpoints } : {}),
              upstreamsFilledLater: filled,
            },
          ),
        )
      } catch (err) {
        await collector.stop() // nothing half-started: no collector left up without its agent
        throw err
      }
      let demo: { stop(): void } | null = null
      if (demoArrivals) {
        const { arrivals, source } = demoArrivals
        demo = startDemoReplay({
          arrivals,
          speed: cfg.start.demoSpeed,
          emit: createSdkEmitter(agent.recorder),
        })
        io.out(
          `demo fleet: services demo-chat and demo-vision, replaying ${source} at ${cfg.start.demoSpeed}x (--no-demo turns it off)`,
        )
        serving = await startServingDemo({
          cli: fileURLToPath(new URL('./tailguard.js', import.meta.url)),
          arrivals,
          sink: agent.recorder,
          node: cfg.agent.node,
          load: cfg.start.demoLoad,
          scrapes: demoScrapes,
          ...(demoSetpoints ? { setpoints: demoSetpoints } : {}),
          log: (level, msg) => log[level](msg),
        })
        io.out(
          `demo serving: service demo-llm, ${serving.modelUrls.length} reference model servers (tailguard serve-model) behind tailguard proxies at ${serving.proxyUrls.join(', ')}; measuring what a replica serves here, to size the load`,
        )
      }
      const ownDemoTargets = demoTargets(cfg, serving, demoSetpoints, agent.address, tokens.admin, io)
      const targets = [
        ...localAgentTokens(cfg.controllers, agent.address, cfg.agent.adminToken ?? tokens.admin),
        ...ownDemoTargets,
      ]
      let controller: RunningController | null = null
      if (targets.length > 0) {
        try {
          controller = await runController({ ...cfg, controllers: targets }, log, {
            store: collector.store,
            budgets: { kind: 'engine', engine: collector.slos },
            board,
            // The demo's replica set goes to the target made for it here, never to one of the config's own.
            ...(ownDemoTargets.length > 0 && serving
              ? {
                  actuators: {
                    [DEMO_TARGET]: [createReplicaSetActuator(serving, { name: 'demo replicas' })],
                  },
                }
              : {}),
          })
        } catch (err) {
          demo?.stop()
          await agent.stop()
          await collector.stop()
          throw new CliError((err as Error).message)
        }
        const modes = targets.map((t) => `${t.name ?? t.service} (${t.mode ?? 'observe'})`).join(', ')
        io.out(`controller: ${modes}, every ${cfg.controller.intervalMs / 1000} s`)
      }
      // The serving demo's load starts once a replica has been measured (a few seconds, in the background).
      let steps: { stop(): void } | null = null
      let stopping = false
      const sized = serving
      void sized?.started.then(() => {
        if (stopping) return
        if (sized.capacityRps !== null)
          io.out(
            `demo serving: one replica serves ${sized.capacityRps.toFixed(1)} req/s here, so demo-llm's trace replays at ${fmtRate(sized.baseRps * sized.speed)} req/s (${Math.round(cfg.start.demoLoad * 100)}% of what two replicas serve flat out)`,
          )
        steps = scheduleDemoSteps(sized, cfg.start, io)
      })
      let keda: RunningKedaScaler | null = null
      if (kedaPort) {
        try {
          keda = await listening(kedaPort, () =>
            startKedaScaler({
              source: board,
              tokens: [tokens.read, tokens.admin],
              host: kedaPort.host,
              port: kedaPort.port,
            }),
          )
        } catch (err) {
          await controller?.stop()
          demo?.stop()
          await agent.stop()
          await collector.stop()
          throw err
        }
      }
      // From here a signal stops everything cleanly, even one that comes before the wait below (a supervisor or
      // a script that sends SIGTERM as soon as the addresses are printed).
      const signals = signalLatch()
      io.out(`tailguard is running (store: ${db})`)
      io.out(`  dashboard:  ${collector.url}/#token=${tokens.read}`)
      io.out(`  API:        ${collector.url}/api/v1  (tokens in ${join(dataDir, 'tokens.json')})`)
      if (agent.grpcAddress) io.out(`  OTLP/gRPC:  ${agent.grpcAddress.host}:${agent.grpcAddress.port}`)
      io.out(`  OTLP/HTTP:  http://${agent.address?.host}:${agent.address?.port}/v1/traces`)
      if (agent.proxyAddress)
        io.out(
          `  proxy:      http://${agent.proxyAddress.host}:${agent.proxyAddress.port} -> ${cfg.agent.proxy.upstreams.join(', ') || "the process actuator's replicas"} (setpoints: http://${agent.address?.host}:${agent.address?.port}/v1/setpoints with the admin token)`,
        )
      if (keda)
        io.out(`  KEDA:       ${kedaPort!.host}:${keda.port} (external scaler; authToken = the read token)`)
      if (controller)
        io.out(`  decisions:  tailguard decisions --collector ${collector.url} --token ${tokens.read}`)
      // Shutdown is bounded: the parts that hold no data get a few seconds each (one that hangs, e.g. a model
      // server that does not exit, is left behind), so that the agent's last reports and the store are always
      // flushed; a last deadline covers those two.
      let stage = 'the KEDA scaler'
      const leftBehind: string[] = []
      let deadline: NodeJS.Timeout | undefined
      const bounded = async (name: string, stop: () => Promise<unknown> | undefined) => {
        stage = name
        let timer: NodeJS.Timeout | undefined
        const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), STAGE_LIMIT_MS)))
        const done = await Promise.race([Promise.resolve(stop()).then(() => 'done' as const), late])
        clearTimeout(timer)
        if (done === 'late') leftBehind.push(name)
      }
      await signals.until(async () => {
        deadline = setTimeout(() => {
          io.err(
            `tailguard: shutdown did not finish within ${SHUTDOWN_DEADLINE_MS / 1000} s (stuck stopping ${stage}); exiting without a clean flush`,
          )
          process.exit(1)
        }, SHUTDOWN_DEADLINE_MS).unref()
        await bounded('the KEDA scaler', () => keda?.close())
        await bounded('the controller', () => controller?.stop())
        await bounded('the demo', () => {
          stopping = true
          steps?.stop()
          demo?.stop()
          return serving?.stop()
        })
        stage = 'the agent (last reports)'
        await agent.stop()
        stage = 'the collector (store)'
        await collector.stop()
      }, log)
      clearTimeout(deadline)
      // What was left behind may hold the event loop (a child that does not exit): exit once the line is out.
      if (leftBehind.length > 0) setTimeout(() => process.exit(1), 500).unref()
      const lost = unsavedData(dataDir, storeFile, storeIno)
      if (lost) throw new CliError(lost, 1)
      if (leftBehind.length > 0)
        throw new CliError(
          `stopping ${leftBehind.join(' and ')} took more than ${STAGE_LIMIT_MS / 1000} s: left behind; the agent's reports and the store were flushed`,
          1,
        )
    })
}

/** The serving demo's controller target. */
const DEMO_TARGET = 'demo-llm'

function fmtRate(rps: number): string {
  return rps >= 10 ? rps.toFixed(0) : rps.toFixed(1)
}

/**
 * The serving demo's load steps: `demoStepAfterS` of base load, then `demoStepMultiplier` times it for
 * `demoStepHoldS`, then the base again, and so on, each change printed (so a newcomer sees the controller
 * add replicas, move the window and shed the low class, and then scale back down).
 */
function scheduleDemoSteps(
  serving: ServingDemo,
  s: StartConfig,
  io: { out(line: string): void },
): { stop(): void } | null {
  if (s.demoStepAfterS === 0) return null
  const base = serving.baseRps * serving.speed
  let timer: NodeJS.Timeout | undefined
  const at = (ms: number) => new Date(Date.now() + ms).toTimeString().slice(0, 8)
  const calm = () => {
    timer = setTimeout(step, s.demoStepAfterS * 1000)
    timer.unref()
  }
  const step = () => {
    serving.setRate(s.demoStepMultiplier)
    io.out(
      `demo: demo-llm's load steps up ${s.demoStepMultiplier}× to ${fmtRate(base * s.demoStepMultiplier)} req/s until ${at(s.demoStepHoldS * 1000)} (watch the controller page, or tailguard decisions)`,
    )
    timer = setTimeout(() => {
      serving.setRate(1)
      io.out(
        `demo: demo-llm's load is back to ${fmtRate(base)} req/s; the next step comes at ${at(s.demoStepAfterS * 1000)}`,
      )
      calm()
    }, s.demoStepHoldS * 1000)
    timer.unref()
  }
  io.out(
    `demo: demo-llm's load steps up ${s.demoStepMultiplier}× at ${at(s.demoStepAfterS * 1000)} for ${s.demoStepHoldS} s, then again every ${s.demoStepAfterS + s.demoStepHoldS} s (--demo-step-after 0 turns it off)`,
  )
  calm()
  return { stop: () => clearTimeout(timer) }
}

/** The inode of `file`, or null when there is none. */
function inodeOf(file: string): number | null {
  try {
    return statSync(file).ino
  } catch {
    return null
  }
}

/** The longest a part that holds no data (KEDA scaler, controller, demo) may take to stop. */
const STAGE_LIMIT_MS = 3000

/** The longest `tailguard start` takes to stop after SIGINT/SIGTERM before it gives up and exits 1. */
const SHUTDOWN_DEADLINE_MS = 10_000

/**
 * Why what this run recorded could not be saved, or null: the data directory, or the SQLite file the store
 * opened, was removed (or replaced) while the process ran. SQLite keeps writing to a removed file, so nothing
 * fails before exit, and everything stored since is lost with it.
 */
function unsavedData(dataDir: string, storeFile: string | null, storeIno: number | null): string | null {
  if (!existsSync(dataDir))
    return `the data directory ${dataDir} was removed while tailguard ran: what it stored since (and the agent's last reports) could not be saved`
  if (storeFile === null || storeIno === null) return null
  if (inodeOf(storeFile) !== storeIno)
    return `the store ${storeFile} was removed or replaced while tailguard ran: what it stored since could not be saved`
  return null
}

/**
 * The demo's LLM arrivals: the given trace, else the Azure conversation trace the package ships. A missing or
 * unreadable file is an error (never a silent fallback to made-up arrivals).
 */
function loadDemoArrivals(
  tracePath: string | null,
  setBy: string,
): { arrivals: DemoArrival[]; source: string } {
  const shipped = shippedTracePath()
  const path = tracePath ?? shipped
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err)
    throw new CliError(
      tracePath === null
        ? `the demo trace shipped with tailguard is missing: ${path} (${code}); restore it (git checkout -- controller/sim/traces), give --demo-trace FILE, or run with --no-demo`
        : `${setBy} ${path}: cannot read (${code})`,
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
  const attribution = path === shipped ? ` — ${AZURE_TRACE_ATTRIBUTION}` : ''
  return { arrivals, source: `${path} (${arrivals.length} requests)${attribution}` }
}

/** Whether `url` is the local agent's (same port, on a loopback name, `0.0.0.0` or the agent's own host). */
function isLocalAgent(url: string, agent: { host: string; port: number }): boolean {
  try {
    const u = new URL(url)
    const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80))
    const host = u.hostname
    return port === agent.port && (host === agent.host || host === '0.0.0.0' || isLoopbackHost(host))
  } catch {
    return false
  }
}

/**
 * The config's targets with the local agent's admin token given to the actuators that talk to it and name no
 * token (an `agent` actuator's setpoints, a `process` actuator's upstream set): `start` made that token, so the
 * file cannot hold it. Never to another address. The environment's `TAILGUARD_AGENT_ADMIN_TOKEN` still wins.
 */
function localAgentTokens(
  targets: readonly ControllerTargetConfig[],
  agent: { host: string; port: number } | null,
  token: string,
): ControllerTargetConfig[] {
  if (!agent || process.env['TAILGUARD_AGENT_ADMIN_TOKEN']) return [...targets]
  return targets.map((t) => ({
    ...t,
    actuators: t.actuators.map((a) =>
      a.type === 'agent' && a.token === undefined && isLocalAgent(a.url, agent)
        ? { ...a, token }
        : a.type === 'process' &&
            a.agentToken === undefined &&
            a.agentUrl !== undefined &&
            isLocalAgent(a.agentUrl, agent)
          ? { ...a, agentToken: token }
          : a,
    ),
  }))
}

/**
 * The serving demo's controller target, unless `start.demoController` is off, the config names a target
 * `demo-llm` already, or the agent runs its own proxy (its setpoints API is that proxy's then).
 */
function demoTargets(
  cfg: TailguardConfig,
  serving: ServingDemo | null,
  setpoints: unknown,
  agentAddress: { host: string; port: number } | null,
  adminToken: string,
  io: { out(line: string): void },
): ControllerTargetConfig[] {
  const mode = cfg.start.demoController
  if (!serving || mode === 'off' || !agentAddress) return []
  if (cfg.controllers.some((t) => (t.name ?? t.service) === DEMO_TARGET)) return []
  if (!setpoints) {
    io.out("demo controller: off (the agent runs its own proxy, so its setpoints API is not the demo's)")
    return []
  }
  return [
    demoControllerTarget({
      mode,
      agentUrl: `http://${agentAddress.host}:${agentAddress.port}`,
      agentToken: cfg.agent.adminToken ?? adminToken,
      replicas: serving.replicaCounts().desired,
    }),
  ]
}
