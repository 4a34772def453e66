import { Option } from 'commander'
import {
  CliError,
  intArg,
  listening,
  LOG_LEVELS,
  makeLogger,
  portArg,
  untilSignal,
} from '../../collector/index.js'
import type { RegisterCommand } from '../../collector/index.js'
import { buildModelServer, MODEL_SERVER_DEFAULTS } from '../model-server/server.js'

interface ServeModelFlags {
  logLevel: string
  host: string
  port: number
  modelName: string
  hidden: number
  layers: number
  seed: number
  windowMs: string
  maxBatch: number
  maxRunning: number
}

/** `tailguard serve-model`: the reference model server (a CPU MLP behind a dynamic batcher). */
export const registerServeModel: RegisterCommand = (program, io) => {
  const d = MODEL_SERVER_DEFAULTS
  program
    .command('serve-model')
    .description(
      'Run the reference model server: a CPU MLP with a dynamic batcher, KServe v2 (/v2/models/{m}/infer), OpenAI /v1/completions (SSE), vLLM-style /metrics, /v1/batching',
    )
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', portArg('--port'), 8000)
    .option('--model-name <name>', 'model name in paths, the OpenAI model field and metrics', d.modelName)
    .option('--hidden <n>', 'width of the hidden layers (a multiple of 32)', intArg('--hidden', 32), d.hidden)
    .option('--layers <n>', 'hidden layers', intArg('--layers', 1), d.layers)
    .option(
      '--seed <n>',
      'weight seed (replicas with one seed compute the same)',
      intArg('--seed', 0),
      d.seed,
    )
    .option('--window-ms <ms>', 'batching window in ms', String(d.batching.windowMs))
    .option(
      '--max-batch <n>',
      'largest batch per forward pass',
      intArg('--max-batch', 1),
      d.batching.maxBatch,
    )
    .option('--max-running <n>', 'sequences generating at once', intArg('--max-running', 1), d.maxRunning)
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info'))
    .addHelpText(
      'after',
      '\nWhen TAILGUARD_MODEL_ADMIN_TOKEN is set, /v1/batching needs it as a bearer token.\nExample: tailguard serve-model --port 8000 --window-ms 5 --max-batch 16',
    )
    .action(async (flags: ServeModelFlags) => {
      const windowMs = Number(flags.windowMs)
      if (!(Number.isFinite(windowMs) && windowMs >= 0 && windowMs <= 10_000))
        throw new CliError(`--window-ms: expected a number 0..10000, got '${flags.windowMs}'`)
      if (flags.hidden > 8192 || flags.hidden % 32 !== 0)
        throw new CliError(`--hidden: expected a multiple of 32 up to 8192, got ${flags.hidden}`)
      if (flags.layers > 64) throw new CliError(`--layers: expected at most 64, got ${flags.layers}`)
      if (flags.maxBatch > 1024)
        throw new CliError(`--max-batch: expected at most 1024, got ${flags.maxBatch}`)
      const log = makeLogger(flags.logLevel)
      const server = buildModelServer(
        {
          ...d,
          modelName: flags.modelName,
          hidden: flags.hidden,
          layers: flags.layers,
          seed: flags.seed,
          batching: { windowMs, maxBatch: flags.maxBatch },
          maxRunning: flags.maxRunning,
          adminToken: process.env.TAILGUARD_MODEL_ADMIN_TOKEN || null,
        },
        { logger: log },
      )
      const url = await listening({ host: flags.host, port: flags.port, flag: '--port' }, () =>
        server.app.listen({ host: flags.host, port: flags.port }),
      )
      io.out(
        `tailguard serve-model: ${flags.modelName} (${flags.layers}×${flags.hidden} MLP, batches ≤ ${flags.maxBatch} within ${windowMs} ms) on ${url}`,
      )
      await untilSignal(server.close, log)
    })
}
