#!/usr/bin/env node
import { Command, CommanderError } from 'commander'
import { CliError, processIO } from './command.js'
import type { CliIO, RegisterCommand } from './command.js'
import { registerStart } from './commands/start.js'
import { registerCollector } from './commands/collector.js'
import { registerAgent } from './commands/agent.js'
import { registerMigrate } from './commands/migrate.js'
import { registerSim } from './commands/sim.js'

const COMMANDS: readonly RegisterCommand[] = [
  registerStart,
  registerCollector,
  registerAgent,
  registerMigrate,
  registerSim,
]

/**
 * Builds the `tailguard` program with every subcommand registered; `run` parses and executes.
 *
 * @example await buildProgram(processIO).parseAsync(['node', 'tailguard', 'migrate', '--db', 'x.db'])
 */
export function buildProgram(io: CliIO): Command {
  const program = new Command('tailguard')
    .description('Observability and SLO control plane for ML inference fleets')
    .version('0.1.0')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
  for (const register of COMMANDS) register(program, io)
  return program
}

/** Runs the CLI with `argv`; resolves to the exit code. */
export async function run(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  const program = buildProgram(io).exitOverride()
  try {
    await program.parseAsync(argv as string[])
    return 0
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode
    if (err instanceof CliError) {
      io.err(`tailguard: ${err.message}`)
      return err.exitCode
    }
    io.err(`tailguard: ${(err as Error).stack ?? String(err)}`)
    return 1
  }
}

const isMain = process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href
if (isMain) {
  run(process.argv).then(
    (code) => {
      if (code !== 0) process.exitCode = code
    },
    (err: unknown) => {
      process.stderr.write(String(err) + '\n')
      process.exitCode = 1
    },
  )
}
