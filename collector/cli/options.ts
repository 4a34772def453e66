import { Option } from 'commander'
import type { Command } from 'commander'
import pino from 'pino'
import type { Logger } from 'pino'
import { readConfigFile, resolveConfig } from '../config/index.js'
import type { TailguardConfig } from '../config/index.js'
import { ConfigInvalid } from '../errors.js'
import { CliError } from './command.js'

/** Parses a flag value as an integer port, naming the flag in the error. */
export function portArg(flag: string) {
  return (value: string): number => {
    const n = Number(value)
    if (!Number.isInteger(n) || n < 0 || n > 65535)
      throw new CliError(`${flag}: expected a port number 0-65535, got '${value}'`)
    return n
  }
}

/** Parses a flag value as a positive integer, naming the flag in the error. */
export function intArg(flag: string, min = 1) {
  return (value: string): number => {
    const n = Number(value)
    if (!Number.isInteger(n) || n < min)
      throw new CliError(`${flag}: expected an integer ≥ ${min}, got '${value}'`)
    return n
  }
}

/** Adds `--config FILE` and `--log-level` to a command. */
export function withCommonOptions(cmd: Command, defaultLogLevel = 'info'): Command {
  return cmd
    .option(
      '-c, --config <file>',
      'YAML config file (see the README); flags override it, environment variables override the file',
    )
    .addOption(
      new Option('--log-level <level>', 'log level')
        .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
        .default(defaultLogLevel),
    )
}

/** Loads the config file named by `--config` (if any), merges env and flags, and validates. */
export function loadConfig(
  configPath: string | undefined,
  flags: Parameters<typeof resolveConfig>[0]['flags'],
): Readonly<TailguardConfig> {
  try {
    const file = configPath ? readConfigFile(configPath) : undefined
    return resolveConfig({
      ...(file ? { file } : {}),
      ...(configPath ? { fileName: configPath } : {}),
      env: process.env,
      ...(flags ? { flags } : {}),
    })
  } catch (err) {
    if (err instanceof ConfigInvalid) throw new CliError(`invalid configuration:\n${err.message}`)
    throw err
  }
}

/** The process logger: JSON lines on stderr, with secrets redacted. */
export function makeLogger(level: string): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['*.token', '*.authorization', 'req.headers.authorization', '*.secret'],
        censor: '[redacted]',
      },
    },
    pino.destination(2),
  )
}

/** Runs until SIGINT/SIGTERM, then calls `stop` once. */
export function untilSignal(stop: () => Promise<void>, log: Logger): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false
    const onSignal = (sig: string) => {
      if (stopping) return
      stopping = true
      log.info(`${sig}: shutting down`)
      stop().then(resolve, (err: unknown) => {
        log.error({ err }, 'shutdown failed')
        resolve()
      })
    }
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
  })
}
