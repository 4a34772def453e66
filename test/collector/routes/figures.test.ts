import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildCollector } from '../../../collector/app.js'
import { createStore } from '../../../collector/index.js'
import type { IntervalReport, Store } from '../../../collector/index.js'
import { createTestDatabase } from '../../helpers/dialects.js'
import type { TestDatabase } from '../../helpers/dialects.js'
import { makeReport } from '../../helpers/reports.js'

const READ = 'read-token-0123456789abcdef'
const AGENT = 'agent-token-0123456789abcdef'
const NOW = Date.parse('2026-11-21T12:00:00Z')
const CHAT = { service: 'chat', model: 'llama', version: '3', replica: 'r0' }
const stat = (v: number) => ({ min: v, mean: v, max: v, last: v })

/**
 * One minute of a chat replica: 600,000 requests (10,000 req/s), latencies of which 5% exceed 100 ms, 54,720
 * output tokens (912 tokens/s), on one H100 drawing 1,000 W.
 */
function minute(seq: number, energy: boolean): IntervalReport {
  const total = [...Array.from({ length: 95 }, () => 50_000), ...Array.from({ length: 5 }, () => 200_000)]
  const r = makeReport({
    seq,
    startMs: NOW - 60_000,
    series: [{ labels: { ...CHAT, node: 'n0' }, samples: { total }, ok: 600_000 }],
  })
  return {
    ...r,
    intervalEndMs: NOW - 1000,
    series: [
      {
        ...r.series[0]!,
        signals: { counters: { outputTokens: 54_720, inputTokens: 12_000 }, sources: ['scrape:vllm'] },
      },
    ],
    gpus: [
      {
        source: 'nvml',
        uuid: 'GPU-h100-0',
        index: 0,
        name: 'NVIDIA H100 80GB HBM3',
        samples: 60,
        fields: {
          powerW: stat(1000),
          // 1,000 W for 60 s = 60,000 J = 6e7 mJ on the cumulative counter
          ...(energy ? { energyMj: { min: 1e9, mean: 1e9 + 3e7, max: 1e9 + 6e7, last: 1e9 + 6e7 } } : {}),
        },
        processes: [{ pid: 7, replica: CHAT, usedMemoryBytes: stat(1e10) }],
      },
    ],
  }
}

describe('GET /api/v1/figures and the figure gauges on /metrics', () => {
  let tdb: TestDatabase
  let store: Store
  let app: FastifyInstance
  beforeEach(async () => {
    tdb = await createTestDatabase('sqlite')
    store = await createStore({ url: tdb.url })
    app = await buildCollector(
      {
        tokens: [
          { token: READ, scope: 'read' },
          { token: AGENT, scope: 'agent' },
        ],
        reportBodyLimitBytes: 1 << 20,
        bodyLimitBytes: 64 * 1024,
      },
      {
        store,
        clock: () => NOW,
        figures: {
          pricing: { gpuHourUsd: 2, byGpuModel: { 'NVIDIA H100 80GB HBM3': 4 } },
          latencySlos: () => [
            { name: 'chat-latency', selector: { service: 'chat' }, metric: 'total', thresholdMs: 100 },
          ],
        },
      },
    )
  })
  afterEach(async () => {
    await app.close()
    await store.close()
    await tdb.drop()
  })
  const post = async (report: IntervalReport) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/reports',
      headers: { authorization: `Bearer ${AGENT}` },
      payload: report,
    })
    expect(res.statusCode, res.body).toBe(200)
  }
  type Figure = { value: number | null; unit: string; reason?: string; inputs: Record<string, unknown> }
  const figures = async (query = 'window=1m') => {
    const res = await app.inject({
      url: `/api/v1/figures?${query}`,
      headers: { authorization: `Bearer ${READ}` },
    })
    expect(res.statusCode, res.body).toBe(200)
    return (res.json() as { services: Array<Record<string, Figure> & { service: string }> }).services
  }

  it('computes each figure from stated inputs, as the worked examples do', async () => {
    await post(minute(1, false))
    const [chat] = await figures()
    expect(chat!.service).toBe('chat')
    expect(chat!['throughput']!.value).toBeCloseTo(10_000, 6)
    // 10,000 req/s with 5% over the SLO → 9,500 req/s
    expect(chat!['goodput']!.value).toBeCloseTo(9500, 6)
    expect(chat!['goodput']!.inputs).toMatchObject({
      okPerSecond: 10_000,
      slos: [
        { name: 'chat-latency', metric: 'total', thresholdMs: 100, goodFraction: 0.95, precision: 'hdr' },
      ],
    })
    expect(chat!['outputTokensPerSecond']!.value).toBeCloseTo(912, 9)
    expect(chat!['inputTokensPerSecond']!.value).toBeCloseTo(200, 9)
    // $4/h (the H100's model price) at 10,000 req/s: 4 / 3600 / 10,000 × 1e6
    expect(chat!['costPerMillionRequests']!.value).toBeCloseTo((4 / 3600 / 10_000) * 1e6, 9)
    expect(chat!['costPerMillionRequests']!.inputs).toMatchObject({
      usdPerHour: 4,
      gpus: [{ uuid: 'GPU-h100-0', priceFrom: 'gpuModel', usdPerHour: 4 }],
    })
    expect(chat!['costPerMillionOutputTokens']!.value).toBeCloseTo((4 / 3600 / 912) * 1e6, 9)
    // 1,000 W at 912 output tokens/s ≈ 1.10 J per token (mean power: no energy counter here)
    expect(chat!['energyPerOutputToken']!.value!.toFixed(2)).toBe('1.10')
    expect(chat!['energyPerOutputToken']!.inputs).toMatchObject({ watts: 1000, from: 'power', gpus: 1 })
  })

  it('prefers the GPU energy counter, says why a figure is missing, and exports the gauges', async () => {
    await post(minute(1, true))
    const [chat] = await figures()
    expect(chat!['energyPerOutputToken']!.inputs).toMatchObject({ from: 'energy counter', watts: 1000 })
    const metrics = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${READ}` } })
    expect(metrics.body).toMatch(/tailguard_service_goodput_requests_per_second\{service="chat"\} \d/)
    expect(metrics.body).toMatch(
      /tailguard_service_tokens_per_second\{service="chat",direction="output"\} \d/,
    )
    expect(metrics.body).toMatch(/tailguard_service_cost_usd_per_million_requests\{service="chat"\} \d/)
    expect(metrics.body).toMatch(/tailguard_service_energy_joules_per_output_token\{service="chat"\} \d/)

    const other = makeReport({
      seq: 2,
      startMs: NOW - 60_000,
      series: [{ labels: { service: 'embed', node: 'n0' }, ok: 10 }],
    })
    await post(other)
    const embed = (await figures('service=embed&window=1m'))[0]!
    expect(embed['goodput']).toMatchObject({ value: null, reason: 'no latency SLO covers this service' })
    expect(embed['costPerMillionRequests']).toMatchObject({
      value: null,
      reason: expect.stringContaining('no GPU process'),
    })
    const bad = await app.inject({
      url: '/api/v1/figures?window=soon',
      headers: { authorization: `Bearer ${READ}` },
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.json()).toMatchObject({
      code: 'TG_ERR_BAD_REQUEST',
      message: expect.stringContaining('window'),
    })
  })
})
