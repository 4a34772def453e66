import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { formatTable } from './table.js'
import type { Bench } from './table.js'

// Runs every test/bench/*.bench.js (compiled) or the ones named on the command line, printing a table each.
const here = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.js'))
  // A name matches its own file exactly when there is one (`ingest` is not also `ingest-gpu`), else by prefix.
  .filter(
    (f, _, all) =>
      only.length === 0 ||
      only.some((o) => f === `${o}.bench.js` || (!all.includes(`${o}.bench.js`) && f.startsWith(o))),
  )
  .sort()

let failed = 0
for (const file of files) {
  const mod = (await import(pathToFileURL(join(here, file)).href)) as { default: Bench }
  const bench = mod.default
  console.error(`bench: ${bench.name} …`)
  try {
    const results = await bench.run((line) => console.error(`  ${line}`))
    for (const r of Array.isArray(results) ? results : [results]) console.log(formatTable(r) + '\n')
  } catch (err) {
    failed++
    const cause = (err as Error).cause
    console.error(
      `bench ${bench.name} failed: ${(err as Error).stack ?? String(err)}${cause === undefined ? '' : `\ncause: ${String((cause as Error).stack ?? cause)}`}`,
    )
  }
}
if (files.length === 0) console.error('bench: no benchmarks matched')
process.exitCode = failed > 0 ? 1 : 0
