/**
 * End-to-end test of the what-if page of the built dashboard (dist/dashboard; `npm run build` first) in real
 * headless Chromium, against the real collector app with the controller's what-if route (the real simulator, in
 * its worker thread) on a real SQLite store: the page's table equals the API's answer for the same input, the
 * charts draw one line per policy, coinciding policies are named, and a read token gets a clear refusal.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createWhatifRoutes, shippedTracePath } from '../../controller/index.js'
import { coincideNotes } from '../../dashboard/src/lib/whatif.js'
import type { WhatifAnswer } from '../../dashboard/src/lib/whatif.js'
import {
  browserTestsRun,
  openPage,
  screenshotter,
  seriousViolations,
  startTestCollector,
  useBrowserAndBackend,
} from '../helpers/dashboard.js'
import type { TestCollector } from '../helpers/dashboard.js'

const RUN = browserTestsRun('what-if dashboard')
const READ = 'whatif-read-token-0123456789'
const ADMIN = 'whatif-admin-token-0123456789'

async function startBackend(): Promise<{ url: string; collector: TestCollector; close(): Promise<void> }> {
  const collector = await startTestCollector({
    tokens: [
      { token: READ, scope: 'read' },
      { token: ADMIN, scope: 'admin' },
    ],
    agentToken: 'whatif-agent-token-0123456789',
    plugins: () => [createWhatifRoutes()],
  })
  const url = await collector.app.listen({ host: '127.0.0.1', port: 0 })
  return { url, collector, close: () => collector.close() }
}

describe.skipIf(!RUN)('what-if page (headless Chromium)', () => {
  const ctx = useBrowserAndBackend(startBackend)
  const shot = screenshotter()
  const whatif = async (body: unknown): Promise<WhatifAnswer> => {
    const res = await fetch(`${ctx.backend.url}/api/v1/whatif`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    expect(res.status).toBe(200)
    return (await res.json()) as WhatifAnswer
  }
  const signIn = async (token: string) => {
    const watched = await openPage(ctx.browser)
    await watched.page.goto(`${ctx.backend.url}/#token=${encodeURIComponent(token)}&/whatif`)
    await watched.page.locator('nav[aria-label="main"] a.active', { hasText: 'What-if' }).waitFor()
    return watched
  }

  it('runs a pattern from the form: the table is the API answer, one chart line per policy, overlaps named', async () => {
    const { page, problems } = await signIn(ADMIN)
    await page.locator('select').selectOption('step')
    await page.getByLabel('Rate, req/s').fill('40')
    await page.getByLabel('Duration, s').fill('600')
    // static, hpa, aimd and tailguard are ticked by default; add keda, drop tailguard.
    await page.locator('input[name="policy"][value="keda"]').check()
    await page.locator('input[name="policy"][value="tailguard"]').uncheck()
    await page.getByLabel('p99 target, ms').fill('50')
    await page.getByRole('button', { name: 'Run what-if' }).click()
    const table = page.locator('section[aria-label="Comparison"] table')
    await table.waitFor({ timeout: 60_000 })

    const api = await whatif({
      workload: { kind: 'pattern', pattern: 'step', rps: 40, durationS: 600 },
      policies: ['static', 'hpa', 'keda', 'aimd'],
      sloP99Ms: 50,
    })
    const rows = page.locator('tr[data-policy]')
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-policy')))).toEqual(
      api.results.map((r) => r.policy),
    )
    for (const r of api.results) {
      const row = page.locator(`tr[data-policy="${r.policy}"]`)
      const value = async (col: string) =>
        Number(await row.locator(`td[data-col="${col}"]`).getAttribute('data-value'))
      expect(await value('attainment')).toBe(r.attainment)
      expect(await value('p99')).toBe(r.p99Ms)
      expect(await value('gpu-hours')).toBe(r.gpuHours)
      expect(await value('replica-changes')).toBe(r.replicaChanges)
      expect(await value('shed')).toBe(r.shedRate)
      expect(await row.locator('td[data-col="attainment"]').textContent()).toBe(
        `${(r.attainment * 100).toFixed(2)}%`,
      )
      expect(await row.locator('td[data-col="gpu-hours"]').textContent()).toBe(r.gpuHours.toFixed(2))
    }

    // Both charts draw a line per policy (recharts' curves), dashed where lines coincide.
    for (const chart of ['whatif-replicas', 'whatif-p99Ms']) {
      const lines = page.locator(`[data-chart="${chart}"] path.recharts-line-curve`)
      await expect.poll(() => lines.count()).toBe(api.results.length)
    }
    // The step at 40 req/s leaves several policies with the same fleet: the page names them, as the API groups them.
    expect(api.coincide.length).toBeGreaterThan(0)
    const note = page.locator('[role="note"]')
    for (const line of coincideNotes(api)) expect(await note.textContent()).toContain(line)
    const later = api.coincide[0]![1]!
    expect(await page.locator(`tr[data-policy="${later}"] td`).first().textContent()).toBe(
      `${later} (= ${api.coincide[0]![0]})`,
    )
    const dashed = page.locator('[data-chart="whatif-replicas"] path.recharts-line-curve[stroke-dasharray]')
    expect(await dashed.count()).toBeGreaterThan(0)
    await shot(page, 'w1-whatif')
    expect(await seriousViolations(page)).toEqual([])
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('runs an uploaded trace file, with the same numbers as the API for that CSV', async () => {
    const csv = readFileSync(shippedTracePath(), 'utf8').split('\n').slice(0, 401).join('\n') + '\n'
    const file = join(ctx.backend.collector.dir, 'upload.csv')
    writeFileSync(file, csv)
    const { page, problems } = await signIn(ADMIN)
    await page.getByLabel('Trace file').check()
    await page.locator('input[type="file"]').setInputFiles(file)
    await page.locator('input[name="policy"][value="tailguard"]').uncheck()
    await page.locator('input[name="policy"][value="aimd"]').uncheck()
    await page.getByRole('button', { name: 'Run what-if' }).click()
    await page.locator('section[aria-label="Comparison"] table').waitFor({ timeout: 60_000 })
    const api = await whatif({ workload: { kind: 'trace', csv, timeScale: 1 }, policies: ['static', 'hpa'] })
    expect(api.results[0]!.arrived).toBe(400)
    for (const r of api.results)
      expect(
        Number(
          await page.locator(`tr[data-policy="${r.policy}"] td[data-col="p99"]`).getAttribute('data-value'),
        ),
      ).toBe(r.p99Ms)
    expect(await page.locator('section[aria-label="Comparison"]').textContent()).toContain('400 requests')
    expect(problems).toEqual([])
    await page.context().close()
  })

  it('a read token gets a clear refusal, and bad input shows the collector’s message naming the field', async () => {
    const { page, problems } = await signIn(READ)
    await page.getByRole('button', { name: 'Run what-if' }).click()
    const alert = page.locator('[role="alert"]')
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/needs an admin token/)
    await page.context().close()
    expect(problems.every((p) => p.includes('403'))).toBe(true)

    const admin = await signIn(ADMIN)
    await admin.page.getByLabel('Rate, req/s').fill('5000')
    await admin.page.getByLabel('Duration, s').fill('3600')
    await admin.page.getByRole('button', { name: 'Run what-if' }).click()
    await admin.page.locator('[role="alert"]').waitFor()
    expect(await admin.page.locator('[role="alert"]').textContent()).toMatch(
      /workload\.rps: .*limit is 300,000/,
    )
    await admin.page.context().close()
  })
})
