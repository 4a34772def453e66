import { describe, expect, it } from 'vitest'
import { foldClasses } from '../../../controller/live/controller.js'
import { observation } from '../policies/fixtures.js'

describe('the controller counts queues of classes past the configured ones under the last, as the proxy does', () => {
  it("folds a default proxy's three classes into the one a target configures", () => {
    // Found live: the proxy's defaults (classes 0–2, default class 1) against `initial.admission` with one
    // entry; the policy sized caps for three classes, and every decision said classes 1 and 2 were ignored.
    const obs = observation({ queueDepth: 6, queueDepthByClass: [1, 2, 3] })
    expect(foldClasses(obs, 1).queueDepthByClass).toEqual([6])
    expect(foldClasses(obs, 2).queueDepthByClass).toEqual([1, 5])
    expect(foldClasses(obs, 3)).toBe(obs)
    expect(foldClasses(obs, 4)).toBe(obs)
    expect(foldClasses(obs, 1).queueDepth).toBe(6)
  })
})
