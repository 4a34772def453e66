import { describe, expect, it } from 'vitest'
import { createRecorder } from '../../agent/index.js'
import {
  decodeHistogram,
  encodeHistogram,
  HISTOGRAM_HIGHEST_US,
  HISTOGRAM_RELATIVE_ERROR,
  newHistogram,
} from '../../collector/index.js'
import { latencySampleUs, prng } from './sources/otlp/helpers.js'

const labels = { service: 'chat', model: 'llama', version: '3', replica: 'r0', node: 'n1' }

describe('recorder', () => {
  it('encodes exactly the histogram that recording every value into HdrHistogram gives', () => {
    const rand = prng(42)
    const rec = createRecorder()
    const direct = newHistogram()
    const edge = [
      0,
      1,
      2,
      1023,
      1024,
      2047,
      2048,
      2049,
      4095,
      4096,
      65_535,
      1_000_000,
      2 ** 31,
      HISTOGRAM_HIGHEST_US,
    ]
    const values = [...edge, ...Array.from({ length: 50_000 }, () => latencySampleUs(rand, 5_000))]
    values.push(...Array.from({ length: 5_000 }, () => Math.floor(rand() * HISTOGRAM_HIGHEST_US)))
    for (const v of values) {
      rec.recordLatency(labels, 'kernel', v)
      direct.recordValue(v)
    }
    const { series } = rec.drain()
    const got = decodeHistogram(series[0]!.histograms.kernel!)
    const want = decodeHistogram(encodeHistogram(direct))
    expect(got.totalCount).toBe(values.length)
    for (const p of [0, 1, 10, 50, 90, 99, 99.9, 99.99, 100])
      expect(got.getValueAtPercentile(p), `p${p}`).toBe(want.getValueAtPercentile(p))
    // Same counts in every bucket: the encodings are byte for byte the same.
    expect(series[0]!.histograms.kernel).toBe(encodeHistogram(direct))
  })

  it('keeps sub-µs detail, clamps at 30 days, and counts negative or NaN durations as dropped', () => {
    const rec = createRecorder()
    rec.recordLatency(labels, 'queue', 12.6)
    rec.recordLatency(labels, 'queue', HISTOGRAM_HIGHEST_US * 10)
    rec.recordLatency(labels, 'queue', -1)
    rec.recordLatency(labels, 'queue', Number.NaN)
    rec.recordLatency(labels, 'warmup' as never, 5)
    const { series, dropped } = rec.drain()
    const h = decodeHistogram(series[0]!.histograms.queue!)
    expect(h.totalCount).toBe(2)
    expect(Math.abs(h.minNonZeroValue - 12.6) / 12.6).toBeLessThanOrEqual(HISTOGRAM_RELATIVE_ERROR)
    expect(Math.abs(h.maxValue - HISTOGRAM_HIGHEST_US) / HISTOGRAM_HIGHEST_US).toBeLessThanOrEqual(
      HISTOGRAM_RELATIVE_ERROR,
    )
    expect(dropped).toEqual({ negative_duration: 2, unknown_phase: 1 })
  })

  it('keeps series apart, counts requests, and starts each interval empty', () => {
    const rec = createRecorder()
    const other = { ...labels, replica: 'r1' }
    rec.recordRequest({
      labels,
      status: 'ok',
      phasesUs: { queue: 10, total: 100 },
      ttftUs: 40,
      tpotUs: 5,
      outputTokens: 7,
    })
    rec.recordRequest({ labels: { ...labels }, status: 'error', errorClass: 'oom', phasesUs: { total: 50 } })
    rec.recordRequest({ labels: other, status: 'shed', errorClass: 'queue_full', phasesUs: {} })
    const first = rec.drain()
    expect(first.series).toHaveLength(2)
    const a = first.series.find((s) => s.labels.replica === 'r0')!
    expect(a.requests).toEqual({ ok: 1, error: 1, shed: 0 })
    expect(a.errorClasses).toEqual({ oom: 1 })
    expect(a.outputTokens).toBe(7)
    expect(Object.keys(a.histograms).sort()).toEqual(['queue', 'total', 'tpot', 'ttft'])
    expect(decodeHistogram(a.histograms.total!).totalCount).toBe(2)
    const b = first.series.find((s) => s.labels.replica === 'r1')!
    expect(b.requests).toEqual({ ok: 0, error: 0, shed: 1 })
    expect(b.histograms).toEqual({})
    expect(rec.recordedRequests).toBe(3)

    rec.recordLatency(other, 'kernel', 5)
    const second = rec.drain()
    expect(second.series.map((s) => s.labels.replica)).toEqual(['r1'])
    expect(second.series[0]!.requests).toEqual({ ok: 0, error: 0, shed: 0 })
    expect(decodeHistogram(second.series[0]!.histograms.kernel!).totalCount).toBe(1)
    expect(rec.drain()).toEqual({ series: [], dropped: {} })
  })

  it('keeps bound handles valid across drains and after an idle series is evicted', () => {
    const rec = createRecorder()
    const h = rec.series(labels)
    h.record('kernel', 100)
    expect(rec.drain().series).toHaveLength(1)
    for (let i = 0; i < 5; i++) expect(rec.drain().series).toHaveLength(0) // idle: evicted along the way
    h.record('kernel', 200)
    rec.recordLatency(labels, 'kernel', 300)
    const { series } = rec.drain()
    expect(series).toHaveLength(1)
    expect(series[0]!.labels).toEqual(labels)
    expect(decodeHistogram(series[0]!.histograms.kernel!).totalCount).toBe(2)
  })

  it('copies the labels it is given, so a caller mutating its object later changes nothing', () => {
    const rec = createRecorder()
    const mutable = { ...labels }
    rec.recordLatency(mutable, 'queue', 1)
    mutable.model = 'other'
    rec.recordLatency(mutable, 'queue', 1)
    const { series } = rec.drain()
    expect(series.map((s) => s.labels.model).sort()).toEqual(['llama', 'other'])
  })

  it('drains in slices the same interval as drain(), while recording goes on into the next one', async () => {
    const fill = (rec: ReturnType<typeof createRecorder>, rand: () => number) => {
      for (let r = 0; r < 3000; r++)
        for (const phase of ['queue', 'total'] as const)
          for (let i = 0; i < 20; i++)
            rec.recordLatency({ ...labels, replica: `r${r}` }, phase, latencySampleUs(rand, 2_000))
    }
    const a = createRecorder({ maxSeries: 10_000, maxSeriesPerService: 10_000 })
    const b = createRecorder({ maxSeries: 10_000, maxSeriesPerService: 10_000 })
    fill(a, prng(7))
    fill(b, prng(7))
    const whole = a.drain()
    // Slices of 1 ms over 3,000 series: the drain must give the event loop back along the way.
    let ticks = 0
    const ticker = setInterval(() => {
      ticks++
      // Recorded while the drain encodes: belongs to the next interval, never to this one.
      b.recordLatency({ ...labels, replica: 'late' }, 'queue', 5)
    }, 0)
    const sliced = await b.drainSliced({ sliceMs: 1 })
    clearInterval(ticker)
    expect(ticks).toBeGreaterThan(0)
    expect(sliced).toEqual(whole)
    const next = b.drain()
    expect(next.series.map((s) => s.labels.replica)).toEqual(['late'])
    expect(decodeHistogram(next.series[0]!.histograms.queue!).totalCount).toBe(ticks)
  })

  it('records into the right series when callers interleave label objects and change one of them', () => {
    // The recorder remembers the last 8 label objects by identity (agent/recorder.ts #lookup): 12 objects in turn
    // overflow that ring, and one changed between calls must land in its new series.
    const rec = createRecorder()
    const objects = Array.from({ length: 12 }, (_, i) => ({ ...labels, replica: `r${i}` }))
    for (let round = 0; round < 3; round++) {
      if (round === 2) objects[3]!.replica = 'moved'
      for (const o of objects) rec.recordLatency(o, 'queue', 100)
      for (const o of objects.slice(0, 5)) rec.recordLatency(o, 'queue', 100)
    }
    const counts = Object.fromEntries(
      rec.drain().series.map((s) => [s.labels.replica, decodeHistogram(s.histograms.queue!).totalCount]),
    )
    expect(counts).toEqual({
      r0: 6,
      r1: 6,
      r2: 6,
      r3: 4,
      moved: 2,
      r4: 6,
      ...Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`r${i + 5}`, 3])),
    })
  })

  it('encodes each histogram exactly past the 512 a drain joins into one string', async () => {
    // The drain joins its encoded histograms 512 at a time and hands each its slice (agent/recorder.ts
    // EncodedBatch): 700 series × 2 phases cross that boundary twice, in drain() and in drainSliced().
    for (const sliced of [false, true]) {
      const rand = prng(sliced ? 11 : 12)
      const rec = createRecorder({ maxSeries: 1000, maxSeriesPerService: 1000 })
      const direct = new Map<string, ReturnType<typeof newHistogram>>()
      for (let r = 0; r < 700; r++)
        for (const phase of ['queue', 'total'] as const) {
          const h = newHistogram()
          for (let i = 0; i < 1 + (r % 7); i++) {
            const v = latencySampleUs(rand, 1_000 + r)
            rec.recordLatency({ ...labels, replica: `r${r}` }, phase, v)
            h.recordValue(v)
          }
          direct.set(`r${r}/${phase}`, h)
        }
      const { series } = sliced ? await rec.drainSliced({ sliceMs: 0 }) : rec.drain()
      expect(series).toHaveLength(700)
      for (const s of series)
        for (const phase of ['queue', 'total'] as const)
          expect(s.histograms[phase]).toBe(encodeHistogram(direct.get(`${s.labels.replica}/${phase}`)!))
    }
  })

  it('keeps a replica on two nodes as two series, and forgets one of them alone', () => {
    const rec = createRecorder()
    const a = { ...labels, node: 'n1' }
    const b = { ...labels, node: 'n2' }
    const c = { ...labels, node: 'n3' }
    for (const l of [a, b, c]) rec.recordLatency(l, 'queue', 10)
    expect(rec.drain().series.map((s) => s.labels.node)).toEqual(['n1', 'n2', 'n3'])
    for (let i = 0; i < 3; i++) {
      rec.recordLatency(b, 'queue', 20)
      rec.drain()
    }
    // n1 and n3 idle for 3 drains: forgotten; n2 is still the same series.
    expect(rec.stats().series).toBe(1)
    rec.recordLatency(b, 'queue', 30)
    rec.recordLatency(a, 'queue', 40)
    const { series } = rec.drain()
    expect(series.map((s) => s.labels.node)).toEqual(['n2', 'n1'])
    expect(series.map((s) => decodeHistogram(s.histograms.queue!).totalCount)).toEqual([1, 1])
    expect(rec.stats().series).toBe(2)
  })

  describe('the hand-over at the interval cut', () => {
    type Rec = ReturnType<typeof createRecorder>
    const SERIES = 2_000
    const at = (r: number) => ({ ...labels, replica: `r${r}`, node: `n${r % 7}` })
    /** One request into series `r`: two phases, an error every fifth, with a class. */
    const request = (rec: Rec, r: number, rand: () => number) =>
      rec.recordRequest({
        labels: at(r),
        status: r % 5 === 0 ? 'error' : 'ok',
        ...(r % 5 === 0 ? { errorClass: 'timeout' } : {}),
        phasesUs: { queue: latencySampleUs(rand, 800), total: latencySampleUs(rand, 5_000) },
        outputTokens: 3,
      })
    const fill = (rec: Rec, rand: () => number) => {
      for (let r = 0; r < SERIES; r++) for (let i = 0; i < 10; i++) request(rec, r, rand)
    }
    const big = () => createRecorder({ maxSeries: 10_000, maxSeriesPerService: 10_000 })
    /** A drained interval keyed by replica, so two recorders that made their series in another order compare. */
    const byReplica = <S extends { labels: { replica: string } }>(series: readonly S[]) =>
      Object.fromEntries(series.map((s) => [s.labels.replica, s]))

    it('puts every sample recorded during a sliced drain in the next interval, none lost or doubled', async () => {
      const whole = big()
      const sliced = big()
      const late = big() // what is recorded while the drain runs, alone
      fill(whole, prng(3))
      fill(sliced, prng(3))
      const rand = prng(11)
      let ticks = 0
      let r = 0
      const ticker = setInterval(() => {
        ticks++
        // Into series the drain has taken already and into ones it has not reached yet, one request each, and
        // into a series made during the drain.
        for (let i = 0; i < 50; i++, r = (r + 37) % SERIES) {
          const seed = (r * 7919 + ticks) >>> 0
          request(sliced, r, prng(seed))
          request(late, r, prng(seed))
        }
        const v = latencySampleUs(rand, 2_000)
        sliced.recordLatency({ ...labels, replica: 'new' }, 'kernel', v)
        late.recordLatency({ ...labels, replica: 'new' }, 'kernel', v)
      }, 0)
      const got = await sliced.drainSliced({ sliceMs: 1 })
      clearInterval(ticker)
      expect(ticks).toBeGreaterThan(1)
      // The cut's interval is exactly what was recorded before it, byte for byte and in the same order.
      expect(got).toEqual(whole.drain())
      // The next one is exactly what was recorded during the drain.
      const next = sliced.drain()
      const want = late.drain()
      expect(next.series).toHaveLength(want.series.length)
      expect(byReplica(next.series)).toEqual(byReplica(want.series))
      expect(sliced.drain()).toEqual({ series: [], dropped: {} })
    })

    it('finishes an earlier drain’s hand-over when the next cut comes before it ends', async () => {
      const whole = big()
      const rec = big()
      fill(whole, prng(5))
      fill(rec, prng(5))
      const first = rec.drainSliced({ sliceMs: 0 })
      // The first slice took a series or two; the rest have not been reached.
      request(rec, 0, prng(1))
      request(rec, SERIES - 1, prng(2))
      const second = rec.drain()
      request(rec, SERIES - 1, prng(3))
      expect(await first).toEqual(whole.drain())
      expect(second.series.map((s) => s.labels.replica)).toEqual(['r0', `r${SERIES - 1}`])
      expect(second.series.map((s) => s.requests)).toEqual([
        { ok: 0, error: 1, shed: 0 },
        { ok: 1, error: 0, shed: 0 },
      ])
      expect(second.series[0]!.errorClasses).toEqual({ timeout: 1 })
      const third = rec.drain()
      expect(third.series.map((s) => s.labels.replica)).toEqual([`r${SERIES - 1}`])
      expect(decodeHistogram(third.series[0]!.histograms.total!).totalCount).toBe(1)
      expect(rec.drain().series).toEqual([])
    })

    it('keeps an idle series recorded into during the drain that would have evicted it', async () => {
      const rec = createRecorder()
      const h = rec.series(labels)
      h.record('kernel', 100)
      rec.recordLatency({ ...labels, replica: 'other' }, 'kernel', 1)
      expect(rec.drain().series).toHaveLength(2)
      rec.recordLatency({ ...labels, replica: 'other' }, 'kernel', 1)
      rec.drain()
      rec.recordLatency({ ...labels, replica: 'other' }, 'kernel', 1)
      rec.drain() // `labels` idle for 2 drains: the next would evict it
      rec.recordLatency({ ...labels, replica: 'other' }, 'kernel', 1)
      const draining = rec.drainSliced({ sliceMs: 0 })
      h.record('kernel', 200)
      expect((await draining).series.map((s) => s.labels.replica)).toEqual(['other'])
      expect(rec.stats().series).toBe(2)
      h.record('kernel', 300)
      const { series } = rec.drain()
      expect(series.map((s) => s.labels.replica)).toEqual(['r0'])
      expect(decodeHistogram(series[0]!.histograms.kernel!).totalCount).toBe(2)
      // Idle 3 drains: forgotten, the handle re-resolves and nothing recorded is lost.
      for (let i = 0; i < 3; i++) rec.drain()
      expect(rec.stats().series).toBe(0)
      h.record('kernel', 400)
      expect(rec.stats().series).toBe(1)
      expect(decodeHistogram(rec.drain().series[0]!.histograms.kernel!).totalCount).toBe(1)
    })

    it('encodes every interval exactly, with count tables reused from earlier ones', () => {
      const rand = prng(99)
      const rec = createRecorder()
      for (let interval = 0; interval < 4; interval++) {
        const direct = Array.from({ length: 30 }, () => newHistogram())
        for (let r = 0; r < 30; r++) {
          // From a few buckets to a few thousand: tables of many sizes grow, retire and are reused.
          const n = Math.floor(rand() * rand() * 5_000)
          for (let i = 0; i < n; i++) {
            const v = latencySampleUs(rand, 100 * (1 + r))
            rec.recordLatency({ ...labels, replica: `r${r}` }, 'decode', v)
            direct[r]!.recordValue(v)
          }
        }
        const got = byReplica(rec.drain().series)
        direct.forEach((h, r) => {
          const s = got[`r${r}`]
          if (h.totalCount === 0) expect(s).toBeUndefined()
          else expect(s!.histograms.decode, `interval ${interval}, r${r}`).toBe(encodeHistogram(h))
        })
      }
    })
  })
})
