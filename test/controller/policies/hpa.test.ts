import { describe, expect, it } from 'vitest'
import { hpaPolicy, kedaPolicy } from '../../../controller/index.js'
import type { Action, FleetObservation, Policy } from '../../../controller/index.js'
import { observation, setpoints } from './fixtures.js'

function drive<S>(
  p: Policy<S>,
  start: number,
  steps: Array<[number, FleetObservation]>,
): Array<number | null> {
  let s = p.init(setpoints(start))
  return steps.map(([t, obs]) => {
    const out = p.step(s, obs, t)
    s = out.state
    const scale = out.actions.find((a: Action) => a.kind === 'scale')
    return scale && scale.kind === 'scale' ? scale.desiredReplicas : null
  })
}

const util = (u: number, ready: number, starting = 0) =>
  observation({ gpuUtilization: u, replicas: { ready, starting } })

describe('HPA', () => {
  it('scales by ceil(ready · util / target)', () => {
    expect(drive(hpaPolicy({ targetUtilization: 0.7 }), 4, [[0, util(1, 4)]])).toEqual([6])
  })
  it('does nothing within the 0.1 tolerance', () => {
    expect(drive(hpaPolicy({ targetUtilization: 0.7 }), 4, [[0, util(0.75, 4)]])).toEqual([null])
  })
  it('acts only every 15 s sync period', () => {
    const r = drive(hpaPolicy({ targetUtilization: 0.5 }), 2, [
      [0, util(1, 2)],
      [5000, util(1, 4)],
      [15_000, util(1, 4)],
    ])
    expect(r).toEqual([4, null, 8])
  })
  it('limits scale-up to max(+100%, +4 pods) per 15 s', () => {
    expect(drive(hpaPolicy({ targetUtilization: 0.1 }), 2, [[0, util(1, 2)]])).toEqual([6])
    expect(drive(hpaPolicy({ targetUtilization: 0.1 }), 10, [[0, util(1, 10)]])).toEqual([20])
  })
  it('counts starting pods as idle when scaling up', () => {
    // 4 ready at 100%, 4 starting: (4·1.0)/8 = 0.5 of 0.7 target → reverses direction → no change.
    expect(drive(hpaPolicy({ targetUtilization: 0.7 }), 8, [[0, util(1, 4, 4)]])).toEqual([null])
  })
  it('holds the highest recommendation of the last 300 s before scaling down', () => {
    const p = hpaPolicy({ targetUtilization: 0.5 })
    const r = drive(p, 10, [
      [0, util(0.5, 10)],
      [15_000, util(0.1, 10)],
      [150_000, util(0.1, 10)],
      [300_000, util(0.1, 10)],
    ])
    expect(r).toEqual([null, null, null, 2])
  })
  it('respects min and max replicas', () => {
    expect(drive(hpaPolicy({ targetUtilization: 0.1, maxReplicas: 3 }), 2, [[0, util(1, 2)]])).toEqual([3])
    expect(drive(hpaPolicy({ scaleDownStabilizationMs: 0, minReplicas: 2 }), 5, [[0, util(0, 5)]])).toEqual([
      2,
    ])
  })
})

describe('KEDA queue depth', () => {
  it('desired = ceil(queue depth / target), through the HPA loop', () => {
    expect(drive(kedaPolicy({ queueDepthTarget: 10 }), 5, [[0, observation({ queueDepth: 100 })]])).toEqual([
      10,
    ])
    expect(drive(kedaPolicy({ queueDepthTarget: 10 }), 5, [[0, observation({ queueDepth: 52 })]])).toEqual([
      null,
    ])
  })
  it('explains its decision', () => {
    const p = kedaPolicy({ queueDepthTarget: 10 })
    const out = p.step(p.init(setpoints(5)), observation({ queueDepth: 100 }), 0)
    expect(out.actions[0]!.reason).toContain('queue depth 100')
  })
})
