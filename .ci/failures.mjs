// Names the failed tests in vitest JSON reports (--reporter=json), a line each with the first line of the
// error, for the end of a CI log: `node .ci/failures.mjs report.json…`. A file that could not run at all
// (a syntax error, a failing hook) is named with its message.
import { existsSync, readFileSync } from 'node:fs'
import { relative } from 'node:path'
import process from 'node:process'
import { stripVTControlCharacters } from 'node:util'

const say = (line) => process.stdout.write(`${line}\n`)

const clip = (text, n = 300) => {
  const first = stripVTControlCharacters(String(text ?? ''))
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.length > 0)
  return (first ?? '').slice(0, n)
}
/** At most this many lines, so that the end of a log that failed everywhere still shows the summary. */
const MOST = 40
let named = 0
const sayFailed = (line) => {
  named++
  if (named <= MOST) say(line)
}
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) continue
  let report
  try {
    report = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    say(`${file}: not a vitest JSON report (${err.message})`)
    continue
  }
  for (const t of report.testResults ?? []) {
    const where = relative(process.cwd(), t.name ?? '?')
    const failedTests = (t.assertionResults ?? []).filter((a) => a.status === 'failed')
    for (const a of failedTests) {
      sayFailed(`FAILED ${where} > ${a.fullName}: ${clip(a.failureMessages?.[0])}`)
    }
    if (failedTests.length === 0 && t.status === 'failed') {
      sayFailed(`FAILED ${where}: ${clip(t.message)}`)
    }
  }
}
if (named > MOST) say(`… and ${named - MOST} more failed tests (above in the log)`)
if (named === 0) say('no failed test in the reports (the run stopped before it finished?)')
