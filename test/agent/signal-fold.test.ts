import { describe, expect, it } from 'vitest'
import { SignalFold } from '../../agent/signal-fold.js'

describe('SignalFold', () => {
  it('folds gauges per interval, sums counters and buckets, and starts over after take', () => {
    const fold = new SignalFold()
    const drops: string[] = []
    const drop = (r: string) => drops.push(r)
    const ttft = (counts: number[]) => ({
      boundsMs: [100, 500],
      counts,
      sumMs: 10 * counts[0]! + 300 * counts[1]!,
    })
    fold.add(
      {
        source: 'proxy',
        gauges: { inFlight: 3 },
        byClass: [{ priorityClass: 0, queued: 2, admitted: 5, shed: { queue_full: 1 } }],
      },
      drop,
    )
    fold.add(
      { source: 'proxy', gauges: { inFlight: 7 }, byClass: [{ priorityClass: 0, queued: 4, admitted: 1 }] },
      drop,
    )
    fold.add(
      { source: 'scrape:vllm', counters: { outputTokens: 100 }, buckets: { ttft: ttft([1, 2, 0]) } },
      drop,
    )
    fold.add(
      { source: 'scrape:vllm', counters: { outputTokens: 50 }, buckets: { ttft: ttft([3, 0, 1]) } },
      drop,
    )
    expect(fold.take()).toEqual({
      signals: {
        gauges: { inFlight: { min: 3, mean: 5, max: 7, last: 7 } },
        counters: { outputTokens: 150 },
        byClass: [
          {
            priorityClass: 0,
            queued: { min: 2, mean: 3, max: 4, last: 4 },
            admitted: 6,
            shed: { queue_full: 1 },
          },
        ],
        sources: ['proxy', 'scrape:vllm'],
      },
      bucketHistograms: {
        ttft: { boundsMs: [100, 500], counts: [4, 2, 1], sumMs: 640, source: 'scrape:vllm' },
      },
    })
    expect(drops).toEqual([])
    expect(fold.empty).toBe(true)
    expect(fold.take()).toEqual({})
  })

  it('refuses what is not a number or a count, and keeps the newer layout when buckets change mid-interval', () => {
    const fold = new SignalFold()
    const drops: string[] = []
    fold.add(
      {
        source: 'x',
        gauges: { running: Number.NaN, waiting: 1 },
        counters: { preemptions: -1 },
        buckets: { tpot: { boundsMs: [10], counts: [1], sumMs: 1 } },
      },
      (r) => drops.push(r),
    )
    fold.add({ source: 'x', buckets: { queue: { boundsMs: [10], counts: [1, 0], sumMs: 1 } } }, (r) =>
      drops.push(r),
    )
    fold.add({ source: 'x', buckets: { queue: { boundsMs: [20], counts: [0, 2], sumMs: 50 } } }, (r) =>
      drops.push(r),
    )
    expect(drops).toEqual([
      'signal_not_finite',
      'signal_negative_count',
      'bucket_histogram_malformed',
      'bucket_layout_changed',
    ])
    const out = fold.take()
    expect(out.signals?.gauges).toEqual({ waiting: { min: 1, mean: 1, max: 1, last: 1 } })
    expect(out.bucketHistograms?.queue).toEqual({ boundsMs: [20], counts: [0, 2], sumMs: 50, source: 'x' })
  })
})
