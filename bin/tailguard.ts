#!/usr/bin/env node
/**
 * The `tailguard` binary: the CLI's composition root. It only wires the commands each part owns
 * (collector/cli, agent/cli, controller/cli) and `start`, which composes them; nothing imports this folder.
 */
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Command, CommanderError } from 'commander'
import { CliError, packageVersion, processIO } from '../collector/index.js'
import type { CliIO, RegisterCommand } from '../collector/index.js'

/**
 * Every subcommand, in `--help` order, with the code that registers it. `run` loads only the part a command
 * needs: `tailguard agent` (a sidecar on every node) does not load the collector's store and server or the
 * controller (test/bin/lean-agent.test.ts).
 */
const COMMANDS: ReadonlyArray<readonly [name: string, load: () => Promise<RegisterCommand>]> = [
  ['start', async () => (await import('./start.js')).registerStart],
  [
    'collector',
    async () => {
      const [{ collectorCommand }, { createWhatifRoutes }] = await Promise.all([
        import('../collector/index.js'),
        import('../controller/index.js'),
      ])
      // The controller's what-if route joins the collector's API (the collector itself imports no controller code).
      return collectorCommand({ plugins: [createWhatifRoutes()] })
    },
  ],
  ['agent', async () => (await import('../agent/index.js')).registerAgent],
  ['serve-model', async () => (await import('../agent/cli/serve-model.js')).registerServeModel],
  ['scrape', async () => (await import('../agent/index.js')).registerScrape],
  ['dead-letter', async () => (await import('../agent/index.js')).registerDeadLetter],
  ['migrate', async () => (await import('../collector/index.js')).registerMigrate],
  ['sim', async () => (await import('../controller/index.js')).registerSim],
  ['controller', async () => (await import('../controller/index.js')).registerController],
  ['decisions', async () => (await import('../controller/index.js')).registerDecisions],
]

/**
 * The subcommand `argv` runs, if its first argument names one; otherwise (`--help`, `--version`, a misspelled
 * name, an option first) every subcommand is registered, so help lists them all and errors can suggest one.
 */
function commandNamed(argv: readonly string[]): string | undefined {
  const first = argv[2]
  return COMMANDS.some(([name]) => name === first) ? first : undefined
}

/**
 * Builds the `tailguard` program with every subcommand registered, or only `only`'s (what `run` does for a
 * named subcommand: its help, options and errors are the same either way).
 *
 * @example (await buildProgram(processIO)).parseAsync(['node', 'tailguard', 'migrate', '--db', 'x.db'])
 */
export async function buildProgram(io: CliIO, only?: string): Promise<Command> {
  const program = new Command('tailguard')
    .description('Observability and SLO control plane for ML inference fleets')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
  const wanted = COMMANDS.filter(([name]) => only === undefined || name === only)
  const registers = await Promise.all(wanted.map(([, load]) => load()))
  for (const register of registers) register(program, io)
  return program
}

/**
 * Runs the CLI with `argv`; resolves to the exit code.
 *
 * @example process.exitCode = await run(process.argv)
 */
export async function run(
  argv: readonly string[],
  io: CliIO = processIO,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const program = (await buildProgram(io, commandNamed(argv))).exitOverride()
  try {
    await program.parseAsync(argv as string[])
    return 0
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode
    if (err instanceof CliError) {
      io.err(`tailguard: ${err.message}`)
      return err.exitCode
    }
    const known = describeFailure(err, env.TAILGUARD_DEBUG)
    if (known) {
      io.err(`tailguard: ${known.line}`)
      return known.exitCode
    }
    io.err(`tailguard: ${(err as Error).stack ?? String(err)}`)
    return 1
  }
}

/**
 * A failure of the machine or of what the user gave (a file that cannot be made, a host that does not resolve,
 * a store that cannot be opened, a certificate that is not PEM) as one line with no stack trace: the message
 * says what failed. Exit code 2 for a store that cannot be opened (the `--db` given is wrong), else 1. Null for
 * anything else (a bug: its stack is printed), and for everything when `TAILGUARD_DEBUG` is set.
 *
 * @example describeFailure(Object.assign(new Error("EEXIST: file already exists, mkdir 'x'"), { code: 'EEXIST', syscall: 'mkdir' }))
 * // { line: "EEXIST: file already exists, mkdir 'x'", exitCode: 1 }
 */
export function describeFailure(err: unknown, debug?: string): { line: string; exitCode: number } | null {
  if (debug || !(err instanceof Error)) return null
  const e = err as Error & { code?: unknown; syscall?: unknown; library?: unknown }
  const code = typeof e.code === 'string' ? e.code : ''
  const line = e.message.split('\n')[0]!
  if (code === 'TG_ERR_STORE_UNAVAILABLE') return { line: `${code}: ${line}`, exitCode: 2 }
  // Node's system errors (a syscall failed: ENOENT, EEXIST, ENOTDIR, EACCES, ENOTFOUND, EADDRINUSE, …),
  // its argument errors (ERR_INVALID_PROTOCOL, …) and OpenSSL's (a key or certificate that does not parse).
  if (
    typeof e.syscall === 'string' ||
    /^E[A-Z]+$/.test(code) ||
    /^ERR_(INVALID|OSSL)_/.test(code) ||
    typeof e.library === 'string'
  )
    return { line: `${line} (TAILGUARD_DEBUG=1 prints where)`, exitCode: 1 }
  return null
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
