import { describe, expect, it } from 'vitest'
import { describeChange } from '../../../controller/cli/decisions.js'

const setpoints = (maxQueue: number, maxConcurrency: number) => ({
  desiredReplicas: 2,
  batchWindowMs: 5,
  maxBatch: 16,
  admission: [{ maxQueue, maxConcurrency }],
})

describe('tailguard decisions: what changed, in words', () => {
  it('writes the policy\'s "no limit" (the largest safe integer) as ∞, and other caps as numbers', () => {
    expect(describeChange(setpoints(256, 128), setpoints(Number.MAX_SAFE_INTEGER, 102))).toBe(
      'class 0 queue/concurrency 256/128→∞/102',
    )
    expect(describeChange(setpoints(Number.MAX_SAFE_INTEGER, 102), setpoints(64, 16))).toBe(
      'class 0 queue/concurrency ∞/102→64/16',
    )
    expect(describeChange(setpoints(64, 16), setpoints(64, 16))).toBe('no change')
  })
})
