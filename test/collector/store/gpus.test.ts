import { describe, expect, it } from 'vitest'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { makeGpuReport } from '../../helpers/gpu-reports.js'
import type { FakeGpu } from '../../helpers/gpu-reports.js'

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0)
const ALL = { fromMs: T0 - 3600_000, toMs: T0 + 3600_000 }
const CHAT = { service: 'chat', model: 'llama', version: '3', replica: 'r0' }

const gpu0 = (util: number[], over: Partial<FakeGpu> = {}): FakeGpu => ({
  uuid: 'GPU-aaaa',
  index: 0,
  name: 'NVIDIA H100 80GB HBM3',
  utilPct: util,
  memUsedBytes: util.map((u) => u * 1e9),
  powerW: util.map((u) => 100 + u),
  temperatureC: 61,
  ...over,
})

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length

for (const dialect of testDialects())
  describe(`${dialect}: store GPU telemetry`, () => {
    const db = useTestStore(dialect)

    it('keeps the inventory with the newest state, events and attributed processes; a retry stores nothing twice', async () => {
      const report = makeGpuReport({
        seq: 1,
        startMs: T0,
        gpus: [
          gpu0([10, 50, 30], {
            events: [{ timeMs: T0 + 1200, kind: 'xid', xid: 79 }],
            processes: [
              { pid: 4242, usedMemoryBytes: 20e9, smUtilPct: 44, replica: CHAT },
              { pid: 777, usedMemoryBytes: 1e9, smUtilPct: 3 },
            ],
          }),
          { uuid: 'GPU-bbbb', index: 1, mig: { gpuInstanceId: 3, computeInstanceId: 0 }, utilPct: [5, 7] },
        ],
      })
      expect(await db.store.ingest(report, T0 + 5000)).toEqual({ kind: 'stored' })
      expect(await db.store.ingest(report, T0 + 6000)).toEqual({ kind: 'duplicate' })

      const gpus = await db.store.gpus(T0 + 10_000)
      expect(gpus.map((g) => [g.node, g.index, g.uuid, g.mig?.gpuInstanceId ?? null])).toEqual([
        ['n0', 0, 'GPU-aaaa', null],
        ['n0', 1, 'GPU-bbbb', 3],
      ])
      const [a, b] = gpus
      expect(a!.name).toBe('NVIDIA H100 80GB HBM3')
      expect(a!.samples).toBe(3)
      expect(a!.fields.gpuUtilPct).toEqual({ min: 10, mean: 30, max: 50, last: 30 })
      expect(a!.fields.powerW).toEqual({ min: 110, mean: 130, max: 150, last: 130 })
      expect(a!.fields.temperatureC?.last).toBe(61)
      expect(a!.lastSeenMs).toBe(T0 + 5000)
      expect(a!.events).toEqual([
        expect.objectContaining({
          uuid: 'GPU-aaaa',
          timeMs: T0 + 1200,
          kind: 'xid',
          xid: 79,
          message: 'XID',
        }),
      ])
      expect(a!.processes.map((p) => [p.pid, p.replica, p.smUtilPct?.last, p.usedMemoryBytes?.max])).toEqual([
        [777, null, 3, 1e9],
        [4242, CHAT, 44, 20e9],
      ])
      expect(b!.mig).toEqual({ gpuInstanceId: 3, computeInstanceId: 0, uuid: null, profile: null })
      expect(b!.fields.gpuUtilPct).toEqual({ min: 5, mean: 6, max: 7, last: 7 })
      expect(b!.processes).toEqual([])

      // The retry added no event and no stat row.
      expect(await db.store.gpuEvents(ALL)).toHaveLength(1)
      const series = await db.store.gpuSeries({ uuid: 'GPU-aaaa' }, ALL, 'gpuUtilPct', 10_000)
      expect(series).toHaveLength(1)
      expect(series[0]!.points).toEqual([{ tMs: T0, min: 10, mean: 30, max: 50, last: 30 }])
    })

    it('follows the newest report; a late report adds its data but does not roll the state back', async () => {
      await db.store.ingest(
        makeGpuReport({ seq: 2, startMs: T0 + 10_000, gpus: [gpu0([80, 90])] }),
        T0 + 15_000,
      )
      await db.store.ingest(
        makeGpuReport({
          seq: 1,
          startMs: T0,
          gpus: [gpu0([20], { processes: [{ pid: 1, usedMemoryBytes: 1, smUtilPct: 1 }] })],
        }),
        T0 + 16_000,
      )
      const [g] = await db.store.gpus(T0 + 20_000)
      expect(g!.fields.gpuUtilPct?.last).toBe(90)
      expect(g!.lastReportMs).toBe(T0 + 15_000)
      expect(g!.firstSeenMs).toBe(T0 + 5000)
      // The late report's processes belong to an older report: not listed as current.
      expect(g!.processes).toEqual([])
      const series = await db.store.gpuSeries({}, ALL, 'gpuUtilPct', 10_000)
      expect(series[0]!.points.map((p) => [p.tMs - T0, p.last])).toEqual([
        [0, 20],
        [10_000, 90],
      ])
    })

    it('answers series per GPU, by node and uuid, with sample-weighted means over wider steps', async () => {
      const a1 = [10, 20, 30]
      const a2 = [70]
      await db.store.ingest(
        makeGpuReport({
          seq: 1,
          startMs: T0,
          gpus: [gpu0(a1), { uuid: 'GPU-bbbb', index: 1, utilPct: [1] }],
        }),
        T0 + 5000,
      )
      await db.store.ingest(makeGpuReport({ seq: 2, startMs: T0 + 20_000, gpus: [gpu0(a2)] }), T0 + 25_000)
      await db.store.ingest(
        makeGpuReport({ seq: 1, instance: 'other', node: 'n1', startMs: T0, gpus: [gpu0([99])] }),
        T0 + 5000,
      )
      const perMinute = await db.store.gpuSeries({ node: 'n0' }, ALL, 'gpuUtilPct', 60_000)
      expect(perMinute.map((s) => s.uuid)).toEqual(['GPU-aaaa', 'GPU-bbbb'])
      expect(perMinute[0]!.points).toEqual([
        { tMs: T0, min: 10, mean: mean([...a1, ...a2]), max: 70, last: 70 },
      ])
      const byUuid = await db.store.gpuSeries({ uuid: 'GPU-aaaa' }, ALL, 'gpuUtilPct', 10_000)
      expect(byUuid.map((s) => [s.node, s.points.length])).toEqual([
        ['n0', 2],
        ['n1', 1],
      ])
      expect(await db.store.gpuSeries({ node: 'nope' }, ALL, 'gpuUtilPct', 10_000)).toEqual([])
      expect(await db.store.gpuSeries({}, ALL, 'tensorActivePct', 10_000)).toEqual([])
      const power = await db.store.gpuSeries({ node: 'n1' }, ALL, 'powerW', 10_000)
      expect(power[0]!.points[0]!.last).toBe(199)
    })

    it('gives the same series before and after compaction, and drops old rows past retention', async () => {
      let seq = 0
      const utils: number[] = []
      for (let t = 0; t < 5 * 60_000; t += 10_000) {
        const u = [(t / 1000) % 97, ((t / 1000) * 7) % 89]
        utils.push(...u)
        await db.store.ingest(
          makeGpuReport({
            seq: ++seq,
            startMs: T0 + t,
            gpus: [gpu0(u, { events: t === 0 ? [{ timeMs: T0, kind: 'xid', xid: 48 }] : [] })],
          }),
          T0 + t + 5000,
        )
      }
      const range = { fromMs: T0, toMs: T0 + 5 * 60_000 }
      const before = await db.store.gpuSeries({}, range, 'gpuUtilPct', 60_000)
      const whole = await db.store.gpuSeries({}, range, 'gpuUtilPct', 5 * 60_000)
      expect(whole[0]!.points[0]!.mean).toBeCloseTo(mean(utils), 9)
      const { rolledUp } = await db.store.compact(T0 + 10 * 60_000)
      expect(rolledUp).toBeGreaterThan(0)
      const after = await db.store.gpuSeries({}, range, 'gpuUtilPct', 60_000)
      expect(after).toHaveLength(1)
      expect(after[0]!.points).toHaveLength(5)
      after[0]!.points.forEach((p, i) => {
        const b = before[0]!.points[i]!
        expect([p.tMs, p.min, p.max, p.last]).toEqual([b.tMs, b.min, b.max, b.last])
        expect(p.mean).toBeCloseTo(b.mean, 9)
      })

      // Three days on: the 10 s rows, process rows are gone, the minute rows and events are kept.
      await db.store.compact(T0 + 3 * 86_400_000)
      const later = await db.store.gpuSeries({}, range, 'gpuUtilPct', 60_000)
      expect(later[0]!.points.map((p) => p.max)).toEqual(after[0]!.points.map((p) => p.max))
      expect(await db.store.gpuEvents(range)).toHaveLength(1)
      // Past the 1 min level's retention (14 days) the events go too; the inventory stays.
      await db.store.compact(T0 + 15 * 86_400_000)
      expect(await db.store.gpuEvents(range)).toEqual([])
      const [g] = await db.store.gpus(T0 + 15 * 86_400_000)
      expect(g!.uuid).toBe('GPU-aaaa')
      expect(g!.events).toEqual([])
    })

    it('lists events of a range newest first, and the inventory only the last hour', async () => {
      await db.store.ingest(
        makeGpuReport({
          seq: 1,
          startMs: T0,
          gpus: [
            gpu0([1], {
              events: [
                { timeMs: T0 + 100, kind: 'xid', xid: 13 },
                { timeMs: T0 + 200, kind: 'ecc_double_bit' },
              ],
            }),
          ],
        }),
        T0 + 5000,
      )
      const events = await db.store.gpuEvents({ fromMs: T0, toMs: T0 + 1000 })
      expect(events.map((e) => [e.kind, e.xid])).toEqual([
        ['ecc_double_bit', null],
        ['xid', 13],
      ])
      expect(await db.store.gpuEvents({ fromMs: T0 + 150, toMs: T0 + 1000 }, { node: 'n0' })).toHaveLength(1)
      expect(await db.store.gpuEvents({ fromMs: T0, toMs: T0 + 1000 }, { node: 'n1' })).toEqual([])
      expect((await db.store.gpus(T0 + 30 * 60_000))[0]!.events).toHaveLength(2)
      expect((await db.store.gpus(T0 + 2 * 3600_000))[0]!.events).toEqual([])
    })
  })
