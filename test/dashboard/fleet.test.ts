// The fleet overview's and the alerts page's pure transforms: joining services with their SLOs, the attention
// order, alert rows with their tier, and the silence form's body.
import { describe, expect, it } from 'vitest'
import { attentionOf, fleetRows, fleetTotals } from '../../dashboard/src/lib/fleet.js'
import type { FleetService } from '../../dashboard/src/lib/fleet.js'
import { alertRows, matchersText, silenceBody } from '../../dashboard/src/lib/alerts.js'
import type { AlertRecord } from '../../dashboard/src/lib/alerts.js'
import type { SloAlertStatus, SloStatus } from '../../dashboard/src/lib/slo-types.js'
import { sloStatus, sloTier } from '../helpers/slo-status.js'

function service(name: string, over: Partial<FleetService> = {}): FleetService {
  return {
    service: name,
    models: ['m'],
    versions: ['1'],
    replicas: 1,
    lastSeen: '2026-11-21T12:00:00.000Z',
    requests: { ok: 100, error: 0, shed: 0 },
    dataSeconds: 60,
    ratePerSecond: 100 / 60,
    errorRatio: 0,
    shedRatio: 0,
    goodputPerSecond: null,
    latencyMs: { count: 100, p50: 10, p99: 50 },
    gpus: { count: 0, utilPct: null },
    costPerMillionRequests: {
      usd: null,
      reason: 'no GPU process attributed to this service (agent.replicas)',
    },
    ...over,
  }
}

const tier = (over: Partial<SloAlertStatus> = {}) => sloTier({ shortBurnRate: 0.4, ...over })

/** A latency SLO (100 ms on total latency) on `svc` (every service when undefined), one tier. */
const slo = (name: string, svc: string | undefined, over: Partial<SloStatus> = {}): SloStatus =>
  sloStatus({
    name,
    kind: 'latency',
    selector: svc === undefined ? {} : { service: svc },
    objective: 0.99,
    thresholdMs: 100,
    phase: 'total',
    alerts: [tier()],
    ...over,
  })

describe('fleetRows', () => {
  it('joins each service with the SLOs that cover it and takes the worst of them', () => {
    const rows = fleetRows(
      [service('chat')],
      [
        slo('chat-latency', 'chat', { budgetRemaining: 0.4, thresholdMs: 200 }),
        slo('chat-ttft', 'chat', { phase: 'ttft', thresholdMs: 50, budgetRemaining: 0.9 }),
        slo('all-availability', undefined, {
          kind: 'availability',
          thresholdMs: null,
          phase: null,
          budgetRemaining: 0.7,
          alerts: [
            tier({ longBurnRate: 0.8, longWindow: '1h' }),
            tier({ tier: 'page-6h', state: 'pending' }),
          ],
        }),
        slo('embed-latency', 'embed', { budgetRemaining: -1 }),
      ],
    )
    expect(rows[0]).toMatchObject({
      slos: ['chat-latency', 'chat-ttft', 'all-availability'],
      budgetRemaining: 0.4,
      burnRate: 0.8,
      burnWindow: '1h',
      firing: 0,
      pending: 1,
      // The ttft SLO's threshold is not one p99 of total latency can be set against.
      objectiveMs: 200,
      attention: 'burning',
    })
  })

  it('sorts firing, then burning, then slow, then ok, then idle; then by budget, burn rate and name', () => {
    const services = [
      service('a-idle', {
        dataSeconds: null,
        ratePerSecond: null,
        latencyMs: { count: 0, p50: null, p99: null },
      }),
      service('b-ok'),
      service('c-slow', { latencyMs: { count: 100, p50: 10, p99: 150 } }),
      service('d-firing'),
      service('e-burning-less'),
      service('f-burning-more'),
      service('g-ok'),
    ]
    const slos = [
      slo('c', 'c-slow'),
      slo('d', 'd-firing', { alerts: [tier({ state: 'firing', longBurnRate: 20 })] }),
      slo('e', 'e-burning-less', { budgetRemaining: 0.2, alerts: [tier({ longBurnRate: 2 })] }),
      slo('f', 'f-burning-more', { budgetRemaining: -0.5, alerts: [tier({ longBurnRate: 3 })] }),
    ]
    const rows = fleetRows(services, slos)
    expect(rows.map((r) => [r.service, r.attention])).toEqual([
      ['d-firing', 'firing'],
      ['f-burning-more', 'burning'],
      ['e-burning-less', 'burning'],
      ['c-slow', 'slow'],
      ['b-ok', 'ok'],
      ['g-ok', 'ok'],
      ['a-idle', 'idle'],
    ])
    expect(fleetTotals(rows)).toEqual({
      services: 7,
      needAttention: 4,
      firing: 1,
      ratePerSecond: (6 * 100) / 60,
    })
  })

  it('shows services without SLOs by their own figures', () => {
    const [row] = fleetRows([service('solo')], [])
    expect(row).toMatchObject({
      slos: [],
      budgetRemaining: null,
      burnRate: null,
      objectiveMs: null,
      attention: 'ok',
    })
    expect(
      attentionOf({
        firing: 0,
        pending: 0,
        budgetRemaining: null,
        burnRate: 1,
        objectiveMs: null,
        dataSeconds: 60,
        latencyMs: { p99: 5 },
      }),
    ).toBe('ok') // a burn rate of exactly 1 spends the budget over the window: sustainable
  })
})

describe('alertRows', () => {
  const NOW = Date.parse('2026-11-21T12:00:00Z')
  const record = (over: Partial<AlertRecord>): AlertRecord => ({
    slo: 'chat-latency',
    tier: 'page-1h',
    state: 'firing',
    activeSince: null,
    firedAt: '2026-11-21T11:50:00.000Z',
    resolvedAt: null,
    silenceId: null,
    updatedAt: '2026-11-21T11:50:00.000Z',
    ...over,
  })

  it('joins each alert with its tier, leaves out those resolved before the range, firing first', () => {
    const slos = [slo('chat-latency', 'chat', { alerts: [tier({ longBurnRate: 16, shortBurnRate: 20 })] })]
    const rows = alertRows(
      [
        record({ state: 'resolved', resolvedAt: '2026-11-21T11:30:00.000Z' }),
        record({ tier: 'ticket-1d', state: 'resolved', resolvedAt: '2026-11-21T09:00:00.000Z' }),
        record({ tier: 'page-6h', state: 'silenced', silenceId: 's1' }),
        record({}),
      ],
      slos,
      NOW,
      3_600_000,
    )
    expect(rows.map((r) => [r.tier, r.state])).toEqual([
      ['page-1h', 'firing'],
      ['page-6h', 'silenced'],
      ['page-1h', 'resolved'],
    ])
    expect(rows[0]).toMatchObject({ severity: 'page', factor: 14.4, longBurnRate: 16, shortBurnRate: 20 })
    // A tier the SLO list does not know (deleted since) keeps its record, without burn rates.
    expect(rows[1]).toMatchObject({ severity: null, longBurnRate: null })
  })
})

describe('silence form', () => {
  it('builds the API body, or says what is missing', () => {
    const draft = { slo: 'chat-latency', tier: '', severity: 'page', duration: ' 2h ', comment: ' deploy ' }
    expect(silenceBody(draft)).toEqual({
      ok: true,
      body: {
        matchers: { slo: 'chat-latency', severity: 'page' },
        duration: '2h',
        comment: 'deploy',
        createdBy: 'dashboard',
      },
    })
    expect(silenceBody({ ...draft, slo: '', severity: '' })).toMatchObject({ ok: false })
    expect(silenceBody({ ...draft, duration: 'soon' })).toMatchObject({
      ok: false,
      problem: expect.stringContaining('30m'),
    })
    expect(silenceBody({ ...draft, comment: ' ' })).toMatchObject({ ok: false })
    expect(matchersText({ slo: 'chat', tier: 'page-1h', severity: 'page' })).toBe(
      'slo=chat, tier=page-1h, severity=page',
    )
  })
})
