import { describe, expect, it } from 'vitest'
import { createControllerStore } from '../../../collector/index.js'
import type { ControllerTargetConfig } from '../../../collector/index.js'
import {
  createLiveController,
  createRecommendationBoard,
  recommendationFromView,
  toAutoscaleAnswer,
} from '../../../controller/index.js'
import type { Action, Policy } from '../../../controller/index.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { latenciesUs, makeReport, rng } from '../../helpers/reports.js'

const T0 = Date.parse('2026-11-23T12:00:00Z')
const INTERVAL = 5000

const config: ControllerTargetConfig = {
  name: 'chat',
  service: 'chat',
  slos: [],
  objective: { thresholdMs: 200, phase: 'e2e', target: 0.99 },
  mode: 'observe',
  knobs: ['replicas'],
  bounds: { minReplicas: 1, maxReplicas: 10, scaleDownStabilizationIntervals: 2 },
  initial: { replicas: 2, windowMs: 5, maxBatch: 8, admission: [{ maxQueue: 64, maxConcurrency: 16 }] },
  actuators: [],
}

/** One replica per 20 req/s, with the numbers in its reason. */
const perTwenty: Policy<null> = {
  name: 'per-twenty',
  init: () => null,
  step(state, obs) {
    const rps = obs.arrivalRps[10] ?? 0
    const want = Math.max(1, Math.ceil(rps / 20))
    const actions: Action[] = [
      { kind: 'scale', desiredReplicas: want, reason: `${rps.toFixed(1)} req/s needs ${want}` },
    ]
    return { state, actions }
  },
}

for (const dialect of testDialects())
  describe(`${dialect}: autoscaler answers follow the live controller`, () => {
    const db = useTestStore(dialect)

    it('publishes each decision (observe mode too) to the board, from the leader and from a standby', async () => {
      const next = rng(3)
      let seq = 1
      for (let t = T0 - 60_000; t < T0; t += 5000) {
        const n = 5 * 100 // 100 req/s
        await db.store.ingest(
          makeReport({
            seq: seq++,
            startMs: t,
            series: [
              { labels: { service: 'chat' }, samples: { total: latenciesUs(next, n, 50_000) }, ok: n },
            ],
          }),
          t + 5000,
        )
      }
      const leaderBoard = createRecommendationBoard()
      const standbyBoard = createRecommendationBoard()
      const make = (holder: string, board: ReturnType<typeof createRecommendationBoard>) =>
        createLiveController({
          store: db.store,
          targets: [{ name: 'chat', config, policy: perTwenty, actuators: [] }],
          intervalMs: INTERVAL,
          holder,
          clock: () => T0,
          onView: (v) => board.publish(recommendationFromView(v)),
        })
      const leader = make('leader', leaderBoard)
      const standby = make('standby', standbyBoard)
      const r = await leader.round(T0 + 3000)
      expect(r.leading).toEqual(['chat'])
      expect(r.decisions).toHaveLength(1)
      await standby.round(T0 + 3100)

      // The rails cap one step (2 → 4 here); the stored decision is what every front end must answer.
      const stored = await createControllerStore(db.store).decision(r.decisions[0]!.id)
      const want = (stored!.setpointsAfter as { desiredReplicas: number }).desiredReplicas
      expect(want).toBeGreaterThan(2)
      const rec = leaderBoard.get({ service: 'chat' })!
      expect(rec.desiredReplicas).toBe(want)
      expect(rec.mode).toBe('observe')
      expect(rec.reason).toMatch(/req\/s needs 5/)
      expect(rec.decisionId).toBe(String(r.decisions[0]!.id))
      expect(rec.signals.arrivalRps).toBeGreaterThan(90)
      expect(rec.scaleToZeroSafe).toBe(false)
      expect(rec.conditions.map((c) => c.type)).toContain('ScalingActive')

      const seen = standbyBoard.get({ service: 'chat' })!
      expect(seen.desiredReplicas).toBe(want)
      expect(seen.decisionId).toBe(rec.decisionId)
      expect(seen.reason).toBe(rec.reason)
      expect(toAutoscaleAnswer(seen, T0 + 3100).keda.metricValue).toBe(want)
    })
  })
