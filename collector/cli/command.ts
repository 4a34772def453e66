import type { Command } from 'commander'

/**
 * Each subcommand of the `tailguard` CLI lives next to the code of the part that owns it (`collector/cli/`, `agent/cli/`, `controller/cli/`; `start` in `bin/`) and exports one
 * `register` function of this type; `bin/tailguard.ts` calls them in order.
 *
 * @example
 * ```ts
 * export const registerSim: RegisterCommand = (program, io) => {
 *   program.command('sim').description('…').option('--json').action(async (opts) => { io.out('…') })
 * }
 * ```
 */
export type RegisterCommand = (program: Command, io: CliIO) => void

/** Where commands write: injected so tests can capture output (no console in library code). */
export interface CliIO {
  out(line: string): void
  err(line: string): void
  /** True when stderr is a terminal (progress bars draw only then). */
  readonly isTTY: boolean
  /** Writes raw text to stderr with no newline (progress bars). */
  errRaw(text: string): void
}

/** The process's own IO. */
export const processIO: CliIO = {
  out: (line) => void process.stdout.write(line + '\n'),
  err: (line) => void process.stderr.write(line + '\n'),
  errRaw: (text) => void process.stderr.write(text),
  isTTY: Boolean(process.stderr.isTTY),
}

/** A failure the CLI reports as one clear line and a non-zero exit code, without a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message)
  }
}
