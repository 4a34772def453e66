import { describe, expect, it } from 'vitest'
import { liveTiles } from '../../dashboard/src/lib/live-transforms.js'

const g = (last: number) => ({ last })

describe('liveTiles', () => {
  it('sums running and waiting over series, takes the highest KV use, flags bucket latencies, adds the figures', () => {
    const tiles = liveTiles(
      {
        series: [
          {
            sources: ['scrape:vllm'],
            points: [
              { gauges: { running: g(1) } },
              { gauges: { running: g(7), waiting: g(3), kvCacheUsage: g(0.42) } },
            ],
            histograms: { ttft: { precision: 'buckets', count: 40, p99Ms: 498 } },
          },
          {
            sources: ['scrape:vllm'],
            points: [{ gauges: { running: g(2), kvCacheUsage: g(0.61) } }],
            histograms: {},
          },
        ],
      },
      {
        services: [
          { service: 'other', goodput: { value: 1 } },
          {
            service: 'chat',
            goodput: { value: 9500 },
            costPerMillionRequests: { value: 5.56 },
            energyPerOutputToken: { value: null },
          },
        ],
      },
      'chat',
    )
    expect(tiles).toEqual([
      { label: 'running', value: 9, unit: 'count' },
      { label: 'waiting', value: 3, unit: 'count' },
      { label: 'KV cache', value: 0.61, unit: 'ratio' },
      { label: 'TTFT p99', value: 498, unit: 'ms', precision: 'buckets' },
      { label: 'goodput', value: 9500, unit: 'rate' },
      { label: '$ per 1M requests', value: 5.56, unit: 'usd' },
    ])
  })

  it('is empty when no source reports anything', () => {
    expect(liveTiles({ series: [] }, { services: [] }, 'chat')).toEqual([])
    expect(liveTiles(null, null, 'chat')).toEqual([])
  })
})
