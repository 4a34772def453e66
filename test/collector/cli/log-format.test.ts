import { spawn, spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { formatLogLine } from '../../../collector/cli/log-format.js'
import { makeLogger, resolveConfig } from '../../../collector/index.js'
import { parseConfigText } from '../../../collector/config/index.js'
import { CLI, assertBuilt, spawnCli } from '../../helpers/cli.js'

// Logs read as sentences on a terminal (time, level, message, key=value) and as JSON lines for machines:
// when stderr is not a terminal, or when asked with --log-format json / log.format.

const SENTENCE = /^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/

function sink(isTTY: boolean) {
  const lines: string[] = []
  return {
    lines,
    isTTY,
    write(text: string) {
      lines.push(...text.split('\n').filter(Boolean))
      return true
    },
  }
}

describe('formatLogLine', () => {
  it('reads as a sentence: time, level, message, then the other fields as key=value', () => {
    const t = new Date(2026, 10, 23, 9, 5, 7, 42).getTime()
    const line = JSON.stringify({
      level: 40,
      time: t,
      pid: 1,
      hostname: 'h',
      msg: 'GPU source nvml unavailable: dlopen failed',
      source: 'nvml',
      retries: 3,
      path: '/a b',
    })
    expect(formatLogLine(line, { color: false })).toBe(
      '09:05:07.042 WARN  GPU source nvml unavailable: dlopen failed source=nvml retries=3 path="/a b"',
    )
  })

  it('puts an error’s message inline and its stack below; passes non-JSON through', () => {
    const out = formatLogLine(
      JSON.stringify({
        level: 50,
        time: 0,
        msg: 'compaction failed',
        err: {
          type: 'Error',
          message: 'disk full',
          stack: 'Error: disk full\n    at compact (store.ts:1:1)',
        },
      }),
      { color: false },
    )
    expect(out).toMatch(/^\d\d:\d\d:\d\d\.\d{3} ERROR compaction failed err="disk full"\n {4}at compact/)
    expect(formatLogLine('not json', { color: false })).toBe('not json')
  })

  it('colours the level only when asked', () => {
    const line = JSON.stringify({ level: 30, time: 0, msg: 'hi' })
    expect(formatLogLine(line, { color: true })).toContain('\x1b[32mINFO \x1b[0m hi')
    expect(formatLogLine(line, { color: false })).not.toContain('\x1b[')
  })
})

describe('makeLogger', () => {
  it('auto: sentences on a terminal, JSON lines otherwise; an explicit format wins', () => {
    const tty = sink(true)
    makeLogger('info', 'auto', tty).warn({ port: 7070 }, 'hello')
    const plain = tty.lines[0]!.replaceAll('\x1b[33m', '').replaceAll('\x1b[0m', '') // a terminal gets colour
    expect(plain).toMatch(SENTENCE)
    expect(plain).toMatch(/WARN {2}hello port=7070$/)

    const pipe = sink(false)
    makeLogger('info', 'auto', pipe).warn({ port: 7070 }, 'hello')
    expect(JSON.parse(pipe.lines[0]!)).toMatchObject({ level: 40, msg: 'hello', port: 7070 })

    const jsonOnTty = sink(true)
    makeLogger('info', 'json', jsonOnTty).info('x')
    expect(JSON.parse(jsonOnTty.lines[0]!)).toMatchObject({ msg: 'x' })

    const prettyOnPipe = sink(false)
    makeLogger('info', 'pretty', prettyOnPipe).info('x')
    expect(prettyOnPipe.lines[0]).toMatch(SENTENCE)
    expect(prettyOnPipe.lines[0]).not.toContain('\x1b[') // no colour codes into a file
  })

  it('redacts secrets in both formats', () => {
    for (const format of ['pretty', 'json'] as const) {
      const s = sink(false)
      makeLogger('info', format, s).info({ agent: { token: 'sekrit-sekrit' } }, 'auth')
      expect(s.lines.join('\n')).not.toContain('sekrit')
      expect(s.lines.join('\n')).toContain('[redacted]')
    }
  })
})

describe('log.format in the config file', () => {
  it('is read from the file, overridden by the flag, and checked', () => {
    const file = parseConfigText('version: 1\nlog:\n  format: json\n', 'tg.yaml')
    expect(resolveConfig({ file }).log.format).toBe('json')
    expect(resolveConfig({ file, flags: { log: { format: 'pretty' } } }).log.format).toBe('pretty')
    expect(resolveConfig({}).log.format).toBe('auto')
    expect(() => parseConfigText('version: 1\nlog:\n  format: loud\n', 'tg.yaml')).toThrow(
      /tg\.yaml:3: log\.format/,
    )
  })
})

describe('the CLI’s logs', () => {
  const env = {
    TAILGUARD_AGENT_TOKEN: 'log-format-agent-token-0123',
    TAILGUARD_NVML_LIBRARY: '/nonexistent/libnvidia-ml.so.1',
  }
  const nvmlWarning = /GPU source nvml unavailable/

  it('the NVML start-up warning is a sentence with --log-format pretty, a JSON line when piped', async () => {
    const pretty = spawnCli(['agent', '--otlp-port', '0', '--log-format', 'pretty'], env)
    await pretty.waitFor(nvmlWarning)
    await pretty.kill()
    const line = pretty
      .output()
      .split('\n')
      .find((l) => nvmlWarning.test(l))!
    expect(line).toMatch(SENTENCE)
    expect(line).toMatch(/WARN {2}GPU source nvml unavailable: .*\/nonexistent\/libnvidia-ml\.so\.1/)

    const piped = spawnCli(['agent', '--otlp-port', '0'], env)
    await piped.waitFor(nvmlWarning)
    await piped.kill()
    const json = piped
      .output()
      .split('\n')
      .find((l) => nvmlWarning.test(l))!
    expect(JSON.parse(json)).toMatchObject({ level: 40 })
  })

  // `script` (util-linux) runs the CLI on a pseudo-terminal, as a person at a terminal would.
  const script = spawnSync('script', ['--version'])
  it.skipIf(script.error !== undefined)('on a real terminal, auto picks sentences', async () => {
    assertBuilt()
    const cmd = `${process.execPath} ${CLI} agent --otlp-port 0`
    const child = spawn('script', ['-qec', cmd, '/dev/null'], {
      env: { ...process.env, ...env, NO_COLOR: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    })
    let out = ''
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no NVML warning:\n${out}`)), 30_000)
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        if (/GPU source nvml unavailable[^\n]*\n/.test(out)) {
          clearTimeout(timer)
          resolve()
        }
      })
    })
    process.kill(-child.pid!, 'SIGTERM')
    const line = out.split(/\r?\n/).find((l) => nvmlWarning.test(l))!
    expect(line).toMatch(SENTENCE)
    expect(line).not.toContain('{"level"')
  })
})
