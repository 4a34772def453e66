import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LONG_RUNNING } from './blocks.js'

/**
 * The `tailguard` executable the docs' shell blocks run: the built CLI, except that a long-running
 * command (`start`, `collector`, `agent`, …) is started in the background, waited on until it prints its
 * ready line (or exits), and its pid written to `$TG_DOCS_PIDS` so the test stops it when the page is done.
 * The docs' default ports are given as flags when the command names none (the ports map comes in
 * `$TG_DOCS_PORTS`), so nothing listens on 7070/4318/4317 of a shared machine.
 */
const SHIM = String.raw`
import { spawn, spawnSync } from 'node:child_process'
import { appendFileSync, closeSync, openSync, readFileSync } from 'node:fs'

const CLI = process.env.TG_DOCS_CLI
const ports = JSON.parse(process.env.TG_DOCS_PORTS)
const LONG = new Set(${JSON.stringify(LONG_RUNNING)})
// The line each command prints once it is serving; other long-running commands: their first line.
const READY = {
  start: /^\s*OTLP\/HTTP:.*$/m,
  collector: /listening on .*$/m,
  agent: /^tailguard agent .*$/m,
}
const args = process.argv.slice(2)
const cmd = args[0]
const has = (flag) => args.some((a) => a === flag || a.startsWith(flag + '='))
const help = args.includes('--help') || args.includes('-h')

if (!LONG.has(cmd) || help) {
  const r = spawnSync(process.execPath, [CLI, ...args], { stdio: 'inherit' })
  process.exit(r.status ?? 1)
}

const extra = []
if ((cmd === 'start' || cmd === 'collector') && !has('--port') && !has('--config')) extra.push('--port', String(ports[7070]))
if ((cmd === 'start' || cmd === 'agent') && !has('--otlp-port') && !has('--config')) extra.push('--otlp-port', String(ports[4318]))
if ((cmd === 'start' || cmd === 'agent') && !has('--otlp-grpc-port') && !has('--config') && ports.grpc) extra.push('--otlp-grpc-port', String(ports[4317]))
if ((ports.keda || []).includes(cmd) && !has('--keda-port') && !has('--config')) extra.push('--keda-port', '0')
if (cmd === 'agent' && !has('--collector') && !has('--config')) extra.push('--collector', 'http://127.0.0.1:' + ports[7070])

const log = process.env.TG_DOCS_DIR + '/' + cmd + '-' + process.pid + '.log'
const fd = openSync(log, 'w')
const child = spawn(process.execPath, [CLI, ...args, ...extra], { stdio: ['ignore', fd, fd], detached: true })
closeSync(fd)
appendFileSync(process.env.TG_DOCS_PIDS, child.pid + ' ' + cmd + '\n')
let exited = null
child.on('exit', (code) => { exited = code ?? 1 })
const ready = READY[cmd] ?? /\n/
// 90 s: under the whole suite on a 2-core CI runner, start with its demo children once took over 30 s.
const deadline = Date.now() + 90000
for (;;) {
  await new Promise((r) => setTimeout(r, 100))
  const out = readFileSync(log, 'utf8')
  if (ready.test(out)) {
    process.stdout.write(out)
    child.unref()
    process.exit(0)
  }
  if (exited !== null) {
    process.stdout.write(out)
    process.exit(exited === 0 ? 1 : exited)
  }
  if (Date.now() > deadline) {
    process.stdout.write(out + '\n(docs test: no ready line from tailguard ' + cmd + ' within 90 s)\n')
    process.exit(1)
  }
}
`

/** Bash run before each block: the CLI under the names the docs use, curl failing on HTTP errors. */
export const PREAMBLE = String.raw`
set -a
[ -f "$TG_DOCS_STATE" ] && . "$TG_DOCS_STATE"
export PATH="$TG_DOCS_BIN:$PATH"
npx() { if [ "$1" = tailguard ]; then shift; tailguard "$@"; else command npx "$@"; fi; }
node() { if [ "$1" = dist/bin/tailguard.js ] || [ "$1" = ./dist/bin/tailguard.js ]; then shift; tailguard "$@"; else command node "$@"; fi; }
curl() {
  local a
  for a in "$@"; do case "$a" in -w|--write-out|-f|--fail|--fail-with-body) command curl -sS "$@"; return; esac; done
  command curl -sS --fail-with-body "$@"
}
trap 'export -p | grep -v -e "declare -x \(PWD\|OLDPWD\|SHLVL\|_\)=" > "$TG_DOCS_STATE"' EXIT
set -e
`

/**
 * Writes the `tailguard` shim into `binDir`.
 *
 * @example installShim('/tmp/docs-bin')
 */
export function installShim(binDir: string): void {
  mkdirSync(binDir, { recursive: true })
  writeFileSync(join(binDir, 'tailguard-shim.mjs'), SHIM)
  const sh = join(binDir, 'tailguard')
  writeFileSync(sh, `#!/bin/sh\nexec "${process.execPath}" "${join(binDir, 'tailguard-shim.mjs')}" "$@"\n`)
  chmodSync(sh, 0o755)
}
