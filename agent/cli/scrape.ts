import { readFile } from 'node:fs/promises'
import { Option } from 'commander'
import { CliError } from '../../collector/index.js'
import type { RegisterCommand } from '../../collector/index.js'
import { SCRAPE_KINDS } from '../sources/scrape/adapters.js'
import type { ScrapeKind } from '../sources/scrape/adapters.js'
import { describeScrape, formatDescription } from '../sources/scrape/describe.js'

interface ScrapeFlags {
  kind: ScrapeKind | 'auto'
  json?: boolean
  timeoutMs: number
}

/** Reads `/metrics` text from a URL or a file; a failure is a CliError naming what could not be read. */
async function readSource(source: string, timeoutMs: number): Promise<string> {
  if (/^https?:\/\//.test(source)) {
    let res: Response
    try {
      res = await fetch(source, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'text/plain' } })
    } catch (err) {
      throw new CliError(`${source}: not answering (${(err as Error).message})`)
    }
    if (!res.ok) throw new CliError(`${source}: HTTP ${res.status}`)
    return res.text()
  }
  try {
    return await readFile(source, 'utf8')
  } catch (err) {
    throw new CliError(
      `${source}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    )
  }
}

/**
 * `tailguard scrape URL|FILE [--kind auto|vllm|triton|tgi|sglang|dcgm] [--json]`: shows what tailguard reads from a
 * model server's (or DCGM exporter's) `/metrics`: normalized phases with their precision, gauges, token counters,
 * and warnings for the names it does not know, so an operator can check the mapping before deploying.
 *
 * @example registerScrape(program, processIO) // bin/tailguard.ts does this
 */
export const registerScrape: RegisterCommand = (program, io) => {
  program
    .command('scrape')
    .description("Show what tailguard reads from a model server's /metrics (a URL or a saved file)")
    .argument('<source>', 'http(s) URL of /metrics, or a file holding a capture')
    .addOption(new Option('--kind <kind>', 'server kind').choices(['auto', ...SCRAPE_KINDS]).default('auto'))
    .option('--json', 'print the description as JSON')
    .option(
      '--timeout-ms <ms>',
      'HTTP timeout (default 10000)',
      (v: string) => {
        const n = Number(v)
        if (!Number.isInteger(n) || n < 1)
          throw new CliError(`--timeout-ms: expected a positive integer, got '${v}'`)
        return n
      },
      10_000,
    )
    .addHelpText(
      'after',
      '\nExamples:\n  tailguard scrape http://127.0.0.1:8000/metrics\n  tailguard scrape triton-metrics.txt --kind triton --json',
    )
    .action(async (source: string, flags: ScrapeFlags) => {
      const text = await readSource(source, flags.timeoutMs)
      const d = describeScrape(text, flags.kind)
      if (d === null)
        throw new CliError(
          `${source}: no vLLM, Triton, TGI, SGLang or DCGM metrics found (give --kind to read it as one of them)`,
        )
      if (flags.json) io.out(JSON.stringify({ source, ...d }, null, 2))
      else for (const line of formatDescription(d, source)) io.out(line)
    })
}
