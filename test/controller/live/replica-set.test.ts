import { describe, expect, it } from 'vitest'
import {
  createRecorder,
  createSetpointsGroup,
  createSourceSet,
  startServingDemo,
} from '../../../agent/index.js'
import { createReplicaSetActuator, httpJson } from '../../../controller/index.js'
import type { ActuatorContext } from '../../../controller/index.js'
import { assertBuilt, CLI, eventually } from '../../helpers/cli.js'

// The actuator `tailguard start` drives its serving demo through: real `serve-model` processes, each behind its
// own proxy, started and drained at runtime; batching in force goes to every replica, new ones included.

const ctx: ActuatorContext = { target: 'demo-llm', fencingToken: 1, decisionId: 1, reason: 'test' }
const batchingOf = async (url: string) => {
  const r = await httpJson(`${url}/v1/batching`)
  return r.ok ? r.json : r.error
}

describe('replica set actuator over the serving demo', () => {
  it('starts replicas that take traffic with the batching in force, and drains them', async () => {
    assertBuilt()
    const recorder = createRecorder()
    const setpoints = createSetpointsGroup()
    const scrapes = createSourceSet('test scrapes')
    await scrapes.start(recorder)
    // 20 arrivals per second of trace time, looping.
    const arrivals = Array.from({ length: 20 }, (_, i) => ({
      offsetMs: i * 50,
      contextTokens: 300,
      generatedTokens: 4,
    }))
    const demo = await startServingDemo({
      cli: CLI,
      arrivals,
      sink: recorder,
      node: 'test',
      replicas: 1,
      hidden: 64,
      setpoints,
      scrapes,
      scrapePeriodMs: 200,
      drainGraceMs: 5000,
    })
    const act = createReplicaSetActuator(demo, { name: 'demo replicas' })
    try {
      const first = await act.read()
      expect(first).toMatchObject({ ok: true, reading: { replicas: { desired: 1, ready: 1, starting: 0 } } })
      expect(scrapes.size).toBe(1)
      expect(await act.apply({ batching: { windowMs: 3, maxBatch: 8 } }, ctx)).toMatchObject({
        ok: true,
        detail: 'batching window 3 ms, max batch 8 on 1 replica(s)',
      })

      const up = await act.apply({ replicas: 2 }, ctx)
      expect(up).toEqual({ ok: true, detail: 'starting r1' })
      expect((await act.read()) as unknown).toMatchObject({ reading: { replicas: { desired: 2 } } })
      await eventually(async () => (demo.replicaCounts().ready === 2 ? true : null), 30_000)
      // The new replica got the batching in force before it took traffic, joined the fleet-wide caps
      // (two proxies × 64 of class 0) and is scraped.
      expect(demo.modelUrls).toHaveLength(2)
      for (const url of demo.modelUrls) expect(await batchingOf(url)).toEqual({ windowMs: 3, maxBatch: 8 })
      expect(setpoints.view().admission[0]!.maxConcurrency).toBe(128)
      expect(scrapes.size).toBe(2)
      // It serves requests under its own label.
      recorder.drain()
      const r1 = await eventually(async () => {
        const s = recorder.drain().series.find((x) => x.labels.replica === 'r1' && x.requests.ok > 0)
        return s ?? null
      }, 15_000)
      expect(r1.labels.service).toBe('demo-llm')

      const down = await act.apply({ replicas: 1 }, ctx)
      expect(down).toEqual({ ok: true, detail: 'draining r1' })
      expect(demo.replicaCounts()).toEqual({ desired: 1, ready: 1, starting: 0 })
      await eventually(async () => (demo.proxies.length === 1 ? true : null), 15_000)
      expect(setpoints.view().admission[0]!.maxConcurrency).toBe(64)
      expect(scrapes.size).toBe(1)
      const sentBefore = demo.sent
      await eventually(async () => (demo.sent > sentBefore + 5 ? true : null), 10_000)
      // Nothing goes to the drained replica any more: only r0 records requests.
      recorder.drain()
      const seen = new Set<string>()
      await eventually(async () => {
        for (const x of recorder.drain().series) if (x.requests.ok > 0) seen.add(x.labels.replica)
        return seen.size > 0 && demo.answered > sentBefore + 10 ? true : null
      }, 15_000)
      expect([...seen]).toEqual(['r0'])

      // Out of range: a value, not a throw.
      expect(await act.apply({ replicas: 99 }, ctx)).toMatchObject({ ok: false, error: /0\.\.32/ })
    } finally {
      await demo.stop()
      await scrapes.stop()
    }
  }, 90_000)
})
