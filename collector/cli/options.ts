import { createServer } from 'node:net'
import { Option } from 'commander'
import type { Command } from 'commander'
import pino from 'pino'
import type { Logger } from 'pino'
import { LOG_FORMATS, readConfigFile, resolveConfig } from '../config/index.js'
import type { LogConfig, TailguardConfig } from '../config/index.js'
import { prettyLogStream } from './log-format.js'
import type { LineSink } from './log-format.js'
import { ConfigInvalid } from '../errors.js'
import { CliError } from './command.js'

/** The levels `--log-level` takes (pino's, and `silent`). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** Parses a flag value as an integer port, naming the flag in the error. */
export function portArg(flag: string) {
  return (value: string): number => {
    // Digits only: Number() would take '' as 0 (a random port), '0x1F90' as 8080 and '1e3' as 1000.
    const n = /^\d{1,5}$/.test(value) ? Number(value) : NaN
    if (!Number.isInteger(n) || n < 0 || n > 65535)
      throw new CliError(`${flag}: expected a port number 0-65535, got '${value}'`)
    return n
  }
}

/** Parses a flag value as a positive integer, naming the flag in the error. */
export function intArg(flag: string, min = 1) {
  return (value: string): number => {
    const n = /^\d+$/.test(value.trim()) ? Number(value) : NaN
    if (!Number.isInteger(n) || n < min)
      throw new CliError(`${flag}: expected an integer ≥ ${min}, got '${value}'`)
    return n
  }
}

/** Parses a worker count: an integer 0-64 or `auto`, naming the flag in the error. */
export function workersArg(flag: string) {
  return (value: string): number | 'auto' => {
    if (value === 'auto') return 'auto'
    const n = Number(value)
    if (value.trim() === '' || !Number.isInteger(n) || n < 0 || n > 64)
      throw new CliError(`${flag}: expected 'auto' or an integer 0-64, got '${value}'`)
    return n
  }
}

/** Parses a flag value as a number in (min, max], naming the flag in the error. */
export function numberArg(flag: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value)
    if (value.trim() === '' || !Number.isFinite(n) || n <= min || n > max)
      throw new CliError(`${flag}: expected a number above ${min} and at most ${max}, got '${value}'`)
    return n
  }
}

/**
 * Adds `--config FILE`, `--log-level` and `--log-format` to a command.
 *
 * @example withCommonOptions(program.command('collector').option('--port <n>', 'HTTP port'))
 */
export function withCommonOptions(cmd: Command, defaultLogLevel = 'info'): Command {
  return cmd
    .option(
      '-c, --config <file>',
      'YAML config file (see the README); flags override it, environment variables override the file',
    )
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default(defaultLogLevel))
    .addOption(
      new Option(
        '--log-format <format>',
        'log lines on stderr: pretty sentences, json lines, or auto (pretty on a terminal, else json; config log.format)',
      ).choices(LOG_FORMATS),
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

/**
 * The process logger on stderr, with secrets redacted: sentences (time, level, message, key=value) for a
 * person at a terminal, JSON lines for machines. `auto` picks by whether stderr is a terminal.
 *
 * @example const log = makeLogger('info', flags.logFormat ?? cfg.log.format)
 */
export function makeLogger(
  level: string,
  format: LogConfig['format'] = 'auto',
  stderr: LineSink & { readonly isTTY?: boolean } = process.stderr,
): Logger {
  const options = {
    level,
    redact: {
      paths: ['*.token', '*.authorization', 'req.headers.authorization', '*.secret'],
      censor: '[redacted]',
    },
  }
  const pretty = format === 'pretty' || (format === 'auto' && stderr.isTTY === true)
  if (pretty) {
    const color = stderr.isTTY === true && !process.env.NO_COLOR
    return pino(options, prettyLogStream(stderr, { color }))
  }
  return stderr === process.stderr ? pino(options, pino.destination(2)) : pino(options, stderr)
}

/** Holds SIGINT/SIGTERM from the moment a long-running command starts; see {@link signalLatch}. */
export interface SignalLatch {
  /** Resolves once `stop` has run after SIGINT/SIGTERM, at once if a signal came while the command started. */
  until(stop: () => Promise<void>, log: Logger): Promise<void>
  /** Lets the signals go again (a command that failed to start). */
  close(): void
}

/**
 * Catches SIGINT/SIGTERM from now on, so that a signal that arrives while a command is still starting (after
 * it printed its addresses, before it waits) is not the default action that kills it without a clean stop: the
 * command stops as soon as it reaches {@link SignalLatch.until}. A second signal while starting, or while
 * stopping, ends the process at once (the usual double Ctrl-C).
 *
 * @example const signals = signalLatch(); const running = await startThings(); await signals.until(running.stop, log)
 */
export function signalLatch(): SignalLatch {
  let received: NodeJS.Signals | null = null
  let handler: ((sig: NodeJS.Signals) => void) | null = null
  const giveUp = (sig: NodeJS.Signals) => {
    process.off('SIGINT', on)
    process.off('SIGTERM', on)
    process.kill(process.pid, sig) // the default action, now that nothing catches it
  }
  const on = (sig: NodeJS.Signals) => {
    if (handler) handler(sig)
    else if (received) giveUp(sig)
    else received = sig
  }
  process.on('SIGINT', on)
  process.on('SIGTERM', on)
  const close = () => {
    process.off('SIGINT', on)
    process.off('SIGTERM', on)
  }
  return {
    close,
    until(stop, log) {
      return new Promise((resolve) => {
        let stopping = false
        handler = (sig) => {
          if (stopping) return giveUp(sig)
          stopping = true
          log.info(`${sig}: shutting down`)
          stop().then(
            () => {
              close()
              resolve()
            },
            (err: unknown) => {
              log.error({ err }, 'shutdown failed')
              close()
              resolve()
            },
          )
        }
        if (received) handler(received)
      })
    },
  }
}

/** Runs until SIGINT/SIGTERM, then calls `stop` once (a {@link signalLatch} armed now). */
export function untilSignal(stop: () => Promise<void>, log: Logger): Promise<void> {
  return signalLatch().until(stop, log)
}

/** A port a command is about to listen on, and the flag that changes it (named in the error). */
export interface PortClaim {
  readonly host: string
  readonly port: number
  readonly flag: string
}

/**
 * Turns a listen error into the one line an operator needs: which port, and which flag changes it (exit
 * code 1). Other errors pass through unchanged.
 *
 * @example throw explainListenError(err, { host: '127.0.0.1', port: 7070, flag: '--port' })
 */
export function explainListenError(err: unknown, claim: PortClaim): unknown {
  const e = err as NodeJS.ErrnoException & { port?: number; address?: string }
  const port = e.port ?? claim.port
  switch (e.code) {
    case 'EADDRINUSE':
      return new CliError(
        `port ${port} is already in use (${claim.flag}); choose another port or stop the process using it`,
        1,
      )
    case 'EACCES':
      return new CliError(
        `port ${port} needs privileges to listen on (${claim.flag}); choose a port above 1023`,
        1,
      )
    case 'EADDRNOTAVAIL':
      return new CliError(
        `cannot listen on ${claim.host}:${port}: no such local address; change the host for ${claim.flag}`,
        1,
      )
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new CliError(
        `cannot listen on ${claim.host}:${port}: the host does not resolve; change the host for ${claim.flag}`,
        1,
      )
    default:
      return err
  }
}

/**
 * Runs `start` (which listens on `claim`'s port), turning a busy port into {@link explainListenError}'s line.
 *
 * @example const c = await listening({ host, port: 7070, flag: '--port' }, () => runCollector(cfg, log))
 */
export async function listening<T>(claim: PortClaim, start: () => Promise<T>): Promise<T> {
  try {
    return await start()
  } catch (err) {
    throw explainListenError(err, claim)
  }
}

/**
 * Checks that every port is free before anything starts (so a busy port never leaves a command half-started),
 * by binding each one briefly. Port 0 (any free port) is always free.
 *
 * @example await assertPortsFree([{ host: '127.0.0.1', port: 7070, flag: '--port' }])
 */
export async function assertPortsFree(claims: readonly PortClaim[]): Promise<void> {
  // Two of the command's own flags on one port (on one address, or one of them on all): say so, rather than
  // call it taken by another process.
  const any = (h: string) => h === '' || h === '0.0.0.0' || h === '::'
  claims.forEach((claim, i) => {
    if (claim.port === 0) return
    const other = claims
      .slice(0, i)
      .find((o) => o.port === claim.port && (o.host === claim.host || any(o.host) || any(claim.host)))
    if (other !== undefined)
      throw new CliError(
        `${claim.flag} ${claim.port} is the same port as ${other.flag}; give each its own port`,
        2,
      )
  })
  for (const claim of claims) {
    if (claim.port === 0) continue
    await new Promise<void>((resolve, reject) => {
      const server = createServer()
      server.once('error', (err) => reject(explainListenError(err, claim)))
      server.listen({ host: claim.host, port: claim.port, exclusive: true }, () =>
        server.close(() => resolve()),
      )
    })
  }
}
