import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packageRoot } from '../../collector/index.js'
import { assertBuilt, runToEnd } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'

// The CLI checks ports before it starts anything; when a port is taken after that check anyway, the collector
// and the agent must undo what they started (store, SLO file watcher, GPU samplers) so that the process
// exits instead of hanging. Each case runs in its own node process, which must end by itself.

const tempDir = useTempDirs('tg-cleanup-')
let busy: Server
let busyPort = 0
beforeAll(async () => {
  busy = createServer()
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
  busyPort = (busy.address() as { port: number }).port
})
afterAll(() => new Promise((resolve) => busy.close(resolve)))

async function runScript(body: string): Promise<{ code: number | null; stdout: string; ms: number }> {
  assertBuilt()
  const dir = tempDir()
  const file = join(dir, 'case.mjs')
  const dist = join(packageRoot(), 'dist')
  writeFileSync(
    file,
    `import * as collector from ${JSON.stringify(join(dist, 'collector', 'index.js'))}\n` +
      `import * as agent from ${JSON.stringify(join(dist, 'agent', 'index.js'))}\n` +
      `const dir = ${JSON.stringify(dir)}\nconst port = ${busyPort}\n` +
      `const log = collector.makeLogger('silent')\n${body}\n`,
  )
  const t0 = Date.now()
  // `timeout` turns a hang into exit code 124 rather than a stuck test.
  const r = await runToEnd('timeout', ['30', process.execPath, file])
  return { code: r.code, stdout: r.stdout.trim(), ms: Date.now() - t0 }
}

describe('a port taken between the check and the listen', () => {
  it('runCollector closes its store and SLO watcher, and the process exits', async () => {
    const r = await runScript(`
      import { mkdirSync } from 'node:fs'
      mkdirSync(dir + '/slos')
      const cfg = collector.resolveConfig({ flags: { collector: {
        port, db: dir + '/c.db', slos: dir + '/slos',
        apiTokens: [{ token: 'cleanup-admin-token-0123', scope: 'admin' }],
        agentTokens: [{ token: 'cleanup-agent-token-0123' }] } } })
      try { await collector.runCollector(cfg, log); console.log('listening?!') }
      catch (err) { console.log(err.code) }
    `)
    expect(r.stdout).toBe('EADDRINUSE')
    expect(r.code).toBe(0) // 124 would mean it hung
  })

  it('runAgent stops its sources and GPU samplers, and the process exits', async () => {
    const r = await runScript(`
      const cfg = collector.resolveConfig({ flags: { agent: {
        token: 'cleanup-agent-token-0123', otlp: { port }, gpu: { nvmlLibrary: '/nonexistent/libnvidia-ml.so.1' } } } })
      try { await agent.runAgent(cfg.agent, log); console.log('listening?!') }
      catch (err) { console.log(err.code) }
    `)
    expect(r.stdout).toBe('EADDRINUSE')
    expect(r.code).toBe(0)
  })
})
