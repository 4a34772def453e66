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
})
