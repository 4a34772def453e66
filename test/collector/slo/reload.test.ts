// `useFiles(path)`: loads SLO files and reloads them when they change; an invalid edit keeps the
// previous definitions.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createSloEngine } from '../../../collector/slo/engine.js'
import { FunctionSource, openDb } from './helpers.js'
import type { TestDb } from './helpers.js'

let tdb: TestDb | undefined
let dir: string | undefined
afterEach(async () => {
  await tdb?.drop()
  if (dir) await rm(dir, { recursive: true, force: true })
  tdb = undefined
  dir = undefined
})

const file = (objective: string) =>
  `version: 1\nslos:\n  - name: chat\n    kind: availability\n    objective: ${objective}\n`

describe('SLO files on disk', () => {
  it('reloads on change and keeps the previous SLOs when an edit is invalid', async () => {
    tdb = await openDb('sqlite')
    dir = await mkdtemp(join(tmpdir(), 'tg-slo-watch-'))
    await writeFile(join(dir, 'slos.yaml'), file('99%'))
    const errors: string[] = []
    const engine = createSloEngine({
      source: new FunctionSource(() => undefined),
      db: tdb.db,
      logger: { info() {}, warn() {}, error: (_o, msg) => void errors.push(msg ?? '') },
    })
    const first = await engine.useFiles(dir)
    expect(first.ok).toBe(true)
    expect(engine.get('chat')!.slo.objective).toBe(0.99)
    await writeFile(join(dir, 'slos.yaml'), file('99.5%'))
    await vi.waitFor(() => expect(engine.get('chat')!.slo.objective).toBe(0.995), {
      timeout: 5000,
      interval: 50,
    })
    await writeFile(join(dir, 'slos.yaml'), file('150%'))
    await vi.waitFor(() => expect(errors).toContain('SLO definitions invalid; keeping the previous ones'), {
      timeout: 5000,
      interval: 50,
    })
    expect(engine.get('chat')!.slo.objective).toBe(0.995)
    await engine.stop()
  })

  it('leaves a failed first load to its caller: nothing logged, nothing watched', async () => {
    tdb = await openDb('sqlite')
    dir = await mkdtemp(join(tmpdir(), 'tg-slo-watch-'))
    const errors: string[] = []
    const warnings: string[] = []
    const engine = createSloEngine({
      source: new FunctionSource(() => undefined),
      db: tdb.db,
      logger: {
        info() {},
        warn: (_o, msg) => void warnings.push(msg ?? ''),
        error: (_o, msg) => void errors.push(msg ?? ''),
      },
    })
    // A path that does not exist: before, the error was logged here and again by the CLI, and watching it
    // logged a third time with a stack trace.
    const first = await engine.useFiles(join(dir, 'missing.yaml'))
    expect(first.ok).toBe(false)
    expect(errors).toEqual([])
    expect(warnings).toEqual([])
    await engine.stop()
  })
})
