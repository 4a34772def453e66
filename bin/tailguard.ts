#!/usr/bin/env node
/**
 * The `tailguard` binary: the CLI's composition root. It only wires the commands each part owns
 * (collector/cli, agent/cli, controller/cli) and `start`, which composes them; nothing imports this folder.
 */
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Command, CommanderError } from 'commander'
import { CliError, packageVersion, collectorCommand, processIO, registerMigrate } from '../collector/index.js'
import type { CliIO, RegisterCommand } from '../collector/index.js'
import { registerAgent, registerDeadLetter, registerScrape, registerServeModel } from '../agent/index.js'
import {
  createWhatifRoutes,
  registerController,
  registerDecisions,
  registerSim,
} from '../controller/index.js'
import { registerStart } from './start.js'

const COMMANDS: readonly RegisterCommand[] = [
  registerStart,
  // The controller's what-if route joins the collector's API (the collector itself imports no controller code).
  collectorCommand({ plugins: [createWhatifRoutes()] }),
  registerAgent,
  registerServeModel,
  registerScrape,
  registerDeadLetter,
  registerMigrate,
  registerSim,
  registerController,
  registerDecisions,
]

/**
 * Builds the `tailguard` program with every subcommand registered; `run` parses and executes.
 *
 * @example await buildProgram(processIO).parseAsync(['node', 'tailguard', 'migrate', '--db', 'x.db'])
 */
export function buildProgram(io: CliIO): Command {
  const program = new Command('tailguard')
    .description('Observability and SLO control plane for ML inference fleets')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
  for (const register of COMMANDS) register(program, io)
  return program
}

/**
 * Runs the CLI with `argv`; resolves to the exit code.
 *
 * @example process.exitCode = await run(process.argv)
 */
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

/**
 * True when this module is the program node started. `argv[1]` may be a symlink (npx, `npm link`, a global
 * install put one in a bin folder), so both sides are compared after resolving links.
 *
 * @example isEntryPoint(import.meta.url, process.argv[1]) // true under `npx tailguard`
 */
export function isEntryPoint(moduleUrl: string, argv1: string | undefined): boolean {
  if (!argv1) return false
  try {
    return realpathSync(fileURLToPath(moduleUrl)) === realpathSync(argv1)
  } catch {
    return false
  }
}

if (isEntryPoint(import.meta.url, process.argv[1])) {
  // `tailguard … | head` closes the pipe early: stop quietly, as other Unix tools do, not with a stack trace.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err
    process.exit(0)
  })
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
