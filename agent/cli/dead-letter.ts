import { join } from 'node:path'
import { CliError } from '../../collector/index.js'
import type { CliIO, RegisterCommand } from '../../collector/index.js'
import { readDeadLetters, removeDeadLetter } from '../ship/dead-letter.js'
import type { DeadLetter } from '../ship/dead-letter.js'

interface FolderFlags {
  dir?: string
  spoolDir?: string
}
interface ListFlags extends FolderFlags {
  json?: boolean
}
interface ReplayFlags extends FolderFlags {
  collector: string
  timeoutMs: string
}

/** Where `tailguard start` keeps its agent's spool, and so its dead letters, by default. */
const DEFAULT_DIR = join('.tailguard', 'spool', 'dead-letter')

function folder(flags: FolderFlags): string {
  if (flags.dir !== undefined && flags.spoolDir !== undefined)
    throw new CliError('give --dir or --spool-dir, not both')
  return flags.dir ?? (flags.spoolDir !== undefined ? join(flags.spoolDir, 'dead-letter') : DEFAULT_DIR)
}

/** What a letter holds, in a few words: a whole report (replayable) or one series the agent set aside. */
function describe(l: DeadLetter): { kind: 'report' | 'series'; what: string } {
  const p = l.payload as { seq?: unknown; series?: unknown; agent?: { id?: unknown } }
  if (Array.isArray(p.series))
    return {
      kind: 'report',
      what: `report seq ${String(p.seq)} of agent ${String(p.agent?.id)}, ${p.series.length} series`,
    }
  const labels = (p.series as { labels?: Record<string, unknown> } | undefined)?.labels ?? {}
  return { kind: 'series', what: `series ${JSON.stringify(labels)}` }
}

const when = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

function list(flags: ListFlags, io: CliIO): void {
  const dir = folder(flags)
  const files = readDeadLetters(dir)
  if (flags.json) {
    io.out(
      JSON.stringify(
        files.map((f) =>
          f.letter
            ? {
                file: f.file,
                time: when(f.letter.atMs),
                status: f.letter.status,
                reason: f.letter.reason,
                ...describe(f.letter),
              }
            : { file: f.file, problem: f.problem },
        ),
        null,
        2,
      ),
    )
    return
  }
  if (files.length === 0) {
    io.out(`no dead letters in ${dir}`)
    return
  }
  io.out(`${files.length} dead letter(s) in ${dir}, oldest first:`)
  for (const f of files) {
    if (!f.letter) {
      io.out(`  ${f.file}  unreadable: ${f.problem}`)
      continue
    }
    const d = describe(f.letter)
    const by = f.letter.status === 0 ? 'set aside by the agent' : `refused with HTTP ${f.letter.status}`
    io.out(`  ${f.file}  ${when(f.letter.atMs)}  ${d.what}, ${by}: ${f.letter.reason}`)
  }
}

async function replay(flags: ReplayFlags, io: CliIO, env: NodeJS.ProcessEnv): Promise<void> {
  const dir = folder(flags)
  const token = env.TAILGUARD_AGENT_TOKEN
  if (!token) throw new CliError('set TAILGUARD_AGENT_TOKEN to the agent token the collector accepts')
  const timeoutMs = Number(flags.timeoutMs)
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
    throw new CliError(`--timeout-ms: expected a positive integer, got '${flags.timeoutMs}'`)
  let url: string
  try {
    url = new URL('/api/v1/reports', flags.collector).href
  } catch {
    throw new CliError(`--collector: not a URL: '${flags.collector}'`)
  }
  const files = readDeadLetters(dir)
  const reports = files.flatMap((f) => {
    if (!f.letter) return []
    const d = describe(f.letter)
    return d.kind === 'report' ? [{ file: f.file, letter: f.letter, d }] : []
  })
  io.out(`replaying ${reports.length} report(s) from ${dir} to ${flags.collector}`)
  const tally = { stored: 0, duplicate: 0, refused: 0 }
  let n = 0
  for (const { file, letter, d } of reports) {
    n++
    let res: Response
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(letter.payload),
        signal: AbortSignal.timeout(timeoutMs),
      })
    } catch (err) {
      throw new CliError(
        `${flags.collector} is not answering (${(err as Error).message}); ${tally.stored + tally.duplicate} of ${reports.length} delivered, the rest kept`,
        1,
      )
    }
    const text = await res.text()
    if (res.ok) {
      const status = (JSON.parse(text) as { status?: string }).status
      removeDeadLetter(dir, file)
      if (status === 'duplicate') tally.duplicate++
      else tally.stored++
      io.out(`  [${n}/${reports.length}] ${d.what}: ${status === 'duplicate' ? 'already stored' : 'stored'}`)
      continue
    }
    let message = text.slice(0, 300)
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message
    } catch {
      // not JSON: the raw text says it
    }
    if (res.status === 401 || res.status === 403)
      throw new CliError(
        `the collector refused the token (HTTP ${res.status}: ${message}); check TAILGUARD_AGENT_TOKEN`,
        1,
      )
    if (res.status >= 500 || res.status === 408 || res.status === 429)
      throw new CliError(
        `the collector cannot take reports now (HTTP ${res.status}: ${message}); ${tally.stored + tally.duplicate} of ${reports.length} delivered, the rest kept`,
        1,
      )
    tally.refused++
    io.out(`  [${n}/${reports.length}] ${d.what}: refused again, kept (HTTP ${res.status}: ${message})`)
  }
  const skipped = files.length - reports.length
  io.out(
    `done: ${tally.stored} stored, ${tally.duplicate} already stored, ${tally.refused} refused again and kept` +
      (skipped > 0
        ? `; ${skipped} file(s) not replayed (series the agent set aside as malformed, or unreadable files: see list)`
        : ''),
  )
  if (tally.refused > 0)
    throw new CliError(`${tally.refused} report(s) refused again: fix the cause (see the reasons above)`, 1)
}

/**
 * `tailguard dead-letter list|replay`: shows the reports the collector refused as bad (and the series an
 * agent set aside), and sends refused reports again once the cause is fixed (a raised limit, a fixed clock).
 * Delivered letters are deleted; a replayed report keeps its agent instance and seq, so the collector stores
 * it at most once however often it is replayed.
 *
 * @example registerDeadLetter(program, processIO) // bin/tailguard.ts does this
 */
export const registerDeadLetter: RegisterCommand = (program, io) => {
  const cmd = program
    .command('dead-letter')
    .description('List or replay the reports the collector refused as bad (the agent’s dead-letter folder)')
  const where = (c: typeof cmd) =>
    c
      .option(
        '--dir <dir>',
        `the dead-letter folder (default ${DEFAULT_DIR}, where tailguard start keeps it)`,
      )
      .option('--spool-dir <dir>', "the agent's --spool-dir: its dead-letter folder is <dir>/dead-letter")
  where(cmd.command('list').description('List dead letters, oldest first, with why each was refused'))
    .option('--json', 'print them as JSON')
    .action((flags: ListFlags) => list(flags, io))
  where(
    cmd
      .command('replay')
      .description(
        'Send refused reports to the collector again; delivered ones are deleted, refused ones kept',
      ),
  )
    .requiredOption('--collector <url>', 'collector base URL, e.g. http://127.0.0.1:7070')
    .option('--timeout-ms <ms>', 'HTTP timeout per report', '15000')
    .addHelpText(
      'after',
      '\nThe agent token comes from TAILGUARD_AGENT_TOKEN.\nExample: TAILGUARD_AGENT_TOKEN=… tailguard dead-letter replay --spool-dir /var/lib/tailguard/spool --collector http://collector:7070',
    )
    .action((flags: ReplayFlags) => replay(flags, io, process.env))
}
