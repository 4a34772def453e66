import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createControllerStore } from '../../../collector/index.js'
import type { ControllerTargetConfig, Store } from '../../../collector/index.js'
import {
  createAgentActuator,
  createKubernetesActuator,
  createLiveController,
} from '../../../controller/index.js'
import type { Action, FleetObservation, LiveTarget, Policy } from '../../../controller/index.js'
import { startFakeAgent, startFakeKubernetes } from '../../helpers/contract-servers.js'
import { testDialects } from '../../helpers/dialects.js'
import { useTestStore } from '../../helpers/test-store.js'
import { latenciesUs, makeReport, rng } from '../../helpers/reports.js'

const T0 = Date.parse('2026-11-23T12:00:00Z')
const INTERVAL = 5000
const K8S_TOKEN = 'sa-token-0123456789'

const config: ControllerTargetConfig = {
  name: 'chat',
  service: 'chat',
  slos: [],
  objective: { thresholdMs: 200, phase: 'e2e', target: 0.99 },
  mode: 'enforce',
  knobs: ['replicas', 'admission'],
  bounds: { minReplicas: 1, maxReplicas: 10, scaleDownStabilizationIntervals: 2 },
  initial: {
    replicas: 2,
    windowMs: 5,
    maxBatch: 8,
    admission: [
      { maxQueue: 64, maxConcurrency: 16 },
      { maxQueue: 64, maxConcurrency: 16 },
    ],
  },
  actuators: [
    { type: 'kubernetes', kind: 'Deployment', namespace: 'llm', name: 'chat' },
    { type: 'agent', url: 'http://unused' },
  ],
}

/** Wants one replica per 20 req/s and sheds class 1 when the queue p99 passes 100 ms; counts its steps. */
function scriptedPolicy(): Policy<{ steps: number; seen: FleetObservation[] }> & { steps: () => number } {
  let steps = 0
  return {
    name: 'scripted',
    steps: () => steps,
    init: () => ({ steps: 0, seen: [] }),
    step(state, obs) {
      steps++
      const rps = obs.arrivalRps[10] ?? 0
      const want = Math.max(1, Math.ceil(rps / 20))
      const actions: Action[] = [
        { kind: 'scale', desiredReplicas: want, reason: `${rps.toFixed(1)} req/s needs ${want}` },
      ]
      if ((obs.latencyMs.e2e.p99 ?? 0) > 200)
        actions.push({
          kind: 'admission',
          priorityClass: 1,
          maxQueue: 4,
          maxConcurrency: 2,
          reason: 'p99 over 200 ms',
        })
      return { state: { steps: state.steps + 1, seen: [...state.seen, obs] }, actions }
    },
  }
}

/** Reports of `rps` requests per second with latencies around `medianMs`, for [fromMs, toMs). */
async function ingestLoad(
  store: Store,
  fromMs: number,
  toMs: number,
  rps: number,
  medianMs: number,
  seq0: number,
) {
  const next = rng(seq0)
  let seq = seq0
  for (let t = fromMs; t < toMs; t += 5000) {
    const n = Math.round(rps * 5)
    await store.ingest(
      makeReport({
        seq: seq++,
        startMs: t,
        series: [
          { labels: { service: 'chat' }, samples: { total: latenciesUs(next, n, medianMs * 1000) }, ok: n },
        ],
      }),
      t + 5000,
    )
  }
  return seq
}

for (const dialect of testDialects())
  describe(`${dialect}: live controller`, () => {
    const db = useTestStore(dialect)
    let k8s: Awaited<ReturnType<typeof startFakeKubernetes>>
    let agent: Awaited<ReturnType<typeof startFakeAgent>>
    beforeEach(async () => {
      k8s = await startFakeKubernetes({ namespace: 'llm', name: 'chat', token: K8S_TOKEN, replicas: 2 })
      agent = await startFakeAgent()
    })
    afterEach(async () => {
      await k8s.close()
      await agent.close()
    })

    const target = (policy: Policy<unknown>, mode: 'observe' | 'enforce' = 'enforce'): LiveTarget => ({
      name: 'chat',
      config: { ...config, mode },
      policy,
      actuators: [
        createKubernetesActuator({
          kind: 'Deployment',
          namespace: 'llm',
          name: 'chat',
          apiServer: k8s.url,
          tokenFile: '/dev/null',
          env: {},
        }),
        createAgentActuator({ url: agent.url }),
      ],
    })
    /** The Deployment's scale subresource alone, with the service-account token from a file. */
    const scaleOnly = () =>
      createKubernetesActuator({
        kind: 'Deployment',
        namespace: 'llm',
        name: 'chat',
        apiServer: k8s.url,
        env: {},
        tokenFile: tokenFile(),
      })

    it('enforce: scales through the scale subresource, sheds the low class, stores each action with reason, outcome and effect', async () => {
      const policy = scriptedPolicy()
      const c = createLiveController({
        store: db.store,
        targets: [
          {
            ...target(policy),
            actuators: [scaleOnly(), createAgentActuator({ url: agent.url })],
          },
        ],
        intervalMs: INTERVAL,
        holder: 'ctl-a',
      })
      let seq = await ingestLoad(db.store, T0, T0 + 60_000, 30, 50, 1)
      const r1 = await c.round(T0 + 62_500)
      expect(r1.leading).toEqual(['chat'])
      // 30 req/s → 2 replicas: nothing to do.
      expect(r1.decisions).toEqual([])
      // Load triples and latency climbs.
      seq = await ingestLoad(db.store, T0 + 60_000, T0 + 80_000, 90, 400, seq)
      const r2 = await c.round(T0 + 82_500)
      expect(r2.decisions).toEqual([{ target: 'chat', id: expect.any(Number), outcome: 'applied' }])
      expect(k8s.state.replicas).toBe(4) // 2 → 5 wanted, +2 per interval
      expect(agent.state.admission[1]).toMatchObject({ maxQueue: 4, maxConcurrency: 2 })
      const cs = createControllerStore(db.store)
      // The lease lapsed between the two rounds (no round ran in between), so this is the second token.
      expect(agent.state.puts[0]!.fencingToken).toBe((await cs.get('chat'))!.fencingToken)
      const [d] = await cs.decisions({ target: 'chat', fromMs: 0, toMs: T0 + 1e6, limit: 10 })
      expect(d!.outcome).toBe('applied')
      expect(d!.reason).toMatch(/scale: 90\.0 req\/s needs 5 \(step to 4 of 5\)/)
      expect(d!.reason).toMatch(/admission: p99 over 200 ms/)
      expect(d!.prediction).toMatchObject({ arrivalRps: 90 })
      expect((d!.observation as FleetObservation).arrivalRps[10]).toBe(90)
      // The next interval finishes the climb; three intervals later the effect is stored.
      await ingestLoad(db.store, T0 + 80_000, T0 + 110_000, 90, 150, seq)
      await c.round(T0 + 87_500)
      expect(k8s.state.replicas).toBe(5)
      for (const t of [92_500, 97_500, 102_500]) await c.round(T0 + t)
      const again = await cs.decision(d!.id)
      expect(again!.effect).toMatchObject({ before: { arrivalRps: 90 }, after: { arrivalRps: 90 } })
      const rec = (await cs.get('chat'))!
      expect(rec.conditions.find((x) => x.type === 'ScalingActive')).toMatchObject({ status: 'True' })
      expect(rec.conditions.find((x) => x.type === 'AbleToScale')).toMatchObject({ status: 'True' })
      expect(rec.setpoints).toMatchObject({ desiredReplicas: 5 })
      await c.stop()
    })

    it('observe: stores the same decisions as recommendations and changes nothing', async () => {
      const c = createLiveController({
        store: db.store,
        targets: [
          {
            ...target(scriptedPolicy(), 'observe'),
            actuators: [scaleOnly(), createAgentActuator({ url: agent.url })],
          },
        ],
        intervalMs: INTERVAL,
        holder: 'ctl-a',
      })
      await ingestLoad(db.store, T0, T0 + 80_000, 90, 400, 1)
      const r = await c.round(T0 + 82_500)
      expect(r.decisions).toEqual([{ target: 'chat', id: expect.any(Number), outcome: 'skipped' }])
      await c.round(T0 + 87_500)
      expect(k8s.requests.filter((q) => q.method !== 'GET')).toEqual([])
      expect(agent.requests.filter((q) => q.method !== 'GET')).toEqual([])
      expect(k8s.state.replicas).toBe(2)
      const [d] = await createControllerStore(db.store).decisions({ fromMs: 0, toMs: T0 + 1e6, limit: 10 })
      expect(d).toMatchObject({
        mode: 'observe',
        outcome: 'skipped',
        outcomeDetail: expect.stringMatching(/observe mode/),
      })
      await c.stop()
    })

    it('stale metrics freeze the target (MetricsStale): no policy step, no action, one decision saying why', async () => {
      const policy = scriptedPolicy()
      const c = createLiveController({
        store: db.store,
        targets: [
          {
            ...target(policy),
            actuators: [scaleOnly(), createAgentActuator({ url: agent.url })],
          },
        ],
        intervalMs: INTERVAL,
        holder: 'ctl-a',
      })
      await ingestLoad(db.store, T0, T0 + 30_000, 90, 400, 1)
      // The data stops at T0+30 s; 3 intervals (15 s) plus the store's 10 s granularity later it is stale.
      const r = await c.round(T0 + 60_000)
      expect(r.decisions).toEqual([{ target: 'chat', id: expect.any(Number), outcome: 'skipped' }])
      await c.round(T0 + 65_000)
      expect(policy.steps()).toBe(0)
      expect(k8s.requests.filter((q) => q.method !== 'GET')).toEqual([])
      expect(agent.state.puts).toEqual([])
      const cs = createControllerStore(db.store)
      const rec = (await cs.get('chat'))!
      expect(rec.conditions.find((x) => x.type === 'MetricsStale')).toMatchObject({
        status: 'True',
        reason: 'NoRecentData',
        message: expect.stringMatching(/newest data \d+ s old \(limit 15 s\): holding every setpoint/),
      })
      expect(rec.conditions.find((x) => x.type === 'ScalingActive')).toMatchObject({
        status: 'False',
        reason: 'MetricsStale',
      })
      const ds = await cs.decisions({ fromMs: 0, toMs: T0 + 1e6, limit: 10 })
      expect(ds).toHaveLength(1)
      expect(ds[0]!.reason).toMatch(/^frozen: newest data/)
      // Fresh data again: it acts.
      await ingestLoad(db.store, T0 + 60_000, T0 + 70_000, 90, 400, 100)
      const back = await c.round(T0 + 72_500)
      expect(back.decisions[0]?.outcome).toBe('applied')
      await c.stop()
    })

    it('a fleet below minReplicas gets its minimum without data (no replicas, so no data would ever come)', async () => {
      await k8s.close()
      k8s = await startFakeKubernetes({ namespace: 'llm', name: 'chat', token: K8S_TOKEN, replicas: 0 })
      // Holds the replica count it was started from, so a policy left at the count below the floor shows.
      let steps = 0
      const hold: Policy<{ desired: number }> = {
        name: 'hold',
        init: (sp) => ({ desired: sp.desiredReplicas }),
        step: (st) => {
          steps++
          return {
            state: st,
            actions: [{ kind: 'scale', desiredReplicas: st.desired, reason: `hold ${st.desired}` }],
          }
        },
      }
      const c = createLiveController({
        store: db.store,
        targets: [{ ...target(hold as Policy<unknown>), actuators: [scaleOnly()] }],
        intervalMs: INTERVAL,
        holder: 'ctl-a',
      })
      const first = await c.round(T0)
      expect(first.decisions).toEqual([{ target: 'chat', id: expect.any(Number), outcome: 'applied' }])
      expect(k8s.state.replicas).toBe(2) // initial.replicas, within bounds 1..10
      // Still no data: the floor holds and nothing else moves; the policy never ran.
      expect((await c.round(T0 + INTERVAL)).decisions).toEqual([])
      expect(k8s.state.puts).toBe(1)
      expect(steps).toBe(0)
      const cs = createControllerStore(db.store)
      const [d] = await cs.decisions({ fromMs: 0, toMs: T0 + 1e6, limit: 10 })
      expect(d!.reason).toBe(
        'scale: the fleet runs 0 replica(s), below the minimum of 1: starting 2; no policy step (no data for this target yet)',
      )
      expect(d!.observation).toBeNull()
      expect((await cs.get('chat'))!.conditions.find((x) => x.type === 'ScalingActive')).toMatchObject({
        status: 'False',
        reason: 'MetricsStale',
      })
      // Data comes (rounds go on every interval, the lease held): the policy starts from the 2 replicas in force,
      // not from the 0 it found, which the rails would have made a scale-down to 1 after two intervals.
      await ingestLoad(db.store, T0, T0 + 60_000, 30, 50, 1)
      for (let t = T0 + 2 * INTERVAL; t <= T0 + 60_000; t += INTERVAL) await c.round(t)
      expect(steps).toBeGreaterThanOrEqual(3)
      expect(k8s.state.replicas).toBe(2)
      expect(k8s.state.puts).toBe(1)
      await c.stop()
    })

    it('a replica change from outside raises ConflictingController and stops acting until the mode is set again', async () => {
      const c = createLiveController({
        store: db.store,
        targets: [
          {
            ...target(scriptedPolicy()),
            actuators: [scaleOnly(), createAgentActuator({ url: agent.url })],
          },
        ],
        intervalMs: INTERVAL,
        holder: 'ctl-a',
      })
      await ingestLoad(db.store, T0, T0 + 120_000, 30, 50, 1)
      await c.round(T0 + 62_500)
      k8s.setReplicas(7) // an HPA on the same Deployment
      const r = await c.round(T0 + 67_500)
      expect(r.decisions).toEqual([{ target: 'chat', id: expect.any(Number), outcome: 'skipped' }])
      await c.round(T0 + 72_500)
      expect(k8s.state.replicas).toBe(7)
      expect(k8s.state.puts).toBe(0)
      const cs = createControllerStore(db.store)
      const rec = (await cs.get('chat'))!
      expect(rec.conditions.find((x) => x.type === 'ConflictingController')).toMatchObject({
        status: 'True',
        reason: 'ReplicasChangedOutside',
        message: expect.stringMatching(/replica count is 7, tailguard last set 2/),
      })
      // The operator acknowledges (sets the mode): tailguard adopts 7 and acts again (30 req/s → 2, slowly).
      await cs.setMode('chat', 'enforce', T0 + 73_000)
      await c.round(T0 + 77_500)
      expect((await cs.get('chat'))!.conditions.find((x) => x.type === 'ConflictingController')?.status).toBe(
        'False',
      )
      for (const t of [82_500, 87_500]) await c.round(T0 + t)
      expect(k8s.state.replicas).toBe(6)
      await c.stop()
    })

    it('one leader per target: a standby takes over after the lease expires and the old leader is fenced off', async () => {
      const cs = createControllerStore(db.store)
      const mk = (holder: string) =>
        createLiveController({
          store: db.store,
          targets: [
            {
              ...target(scriptedPolicy()),
              actuators: [scaleOnly(), createAgentActuator({ url: agent.url })],
            },
          ],
          intervalMs: INTERVAL,
          holder,
        })
      const a = mk('ctl-a')
      const b = mk('ctl-b')
      await ingestLoad(db.store, T0, T0 + 120_000, 30, 50, 1)
      expect((await a.round(T0 + 62_500)).leading).toEqual(['chat'])
      expect((await b.round(T0 + 63_000)).leading).toEqual([])
      // a stores a decision and dies before applying it or recording its outcome.
      const before = (await cs.get('chat'))!.setpoints as Record<string, unknown>
      const pending = await cs.recordDecision(
        {
          target: 'chat',
          timeMs: T0 + 63_500,
          policy: 'scripted',
          mode: 'enforce',
          observation: null,
          prediction: null,
          actions: [{ kind: 'admission', priorityClass: 1, maxQueue: 3, maxConcurrency: 1, reason: 'test' }],
          setpointsBefore: before,
          setpointsAfter: {
            ...before,
            admission: [
              { maxQueue: 64, maxConcurrency: 16 },
              { maxQueue: 3, maxConcurrency: 1 },
            ],
          },
          reason: 'test',
          outcome: 'pending',
          outcomeDetail: null,
        },
        'ctl-a',
        1,
        T0 + 63_500,
      )
      if (pending.kind !== 'stored') throw new Error('not stored')
      // a stops (kill -9): nothing renews. Within 2 intervals b leads, with the next fencing token.
      expect((await b.round(T0 + 69_000)).leading).toEqual([])
      expect((await b.round(T0 + 70_250)).leading).toEqual(['chat'])
      expect((await cs.get('chat'))!).toMatchObject({ leaseHolder: 'ctl-b', fencingToken: 2 })
      expect(await cs.decision(pending.id)).toMatchObject({
        outcome: 'unknown',
        outcomeDetail: expect.stringMatching(/the leader ctl-a stopped before recording the outcome/),
      })
      // A rollback counts it as applied (it may have reached the actuators).
      expect((await cs.lastApplied('chat'))?.id).toBe(pending.id)
      // a comes back from a pause: it sees b's lease and does not act.
      expect((await a.round(T0 + 72_000)).leading).toEqual([])
    })
  })

let tokenPath: string | null = null
/** A service-account token file holding the fake API server's token. */
function tokenFile(): string {
  if (tokenPath) return tokenPath
  const dir = mkdtempSync(join(tmpdir(), 'tg-sa-'))
  tokenPath = join(dir, 'token')
  writeFileSync(tokenPath, K8S_TOKEN)
  return tokenPath
}
