import { describe, expect, it } from 'vitest'
import { createAdmission, createSetpointsState } from '../../../agent/index.js'

const item = { priorityClass: 0, maxConcurrency: 4, maxQueue: 8, queueTimeoutMs: 100 }

describe('setpoints state', () => {
  it('keeps the last setpoints when the controller goes quiet, and says they are stale', () => {
    let now = 1_000_000
    const admission = createAdmission({ classes: [item], gradient2: {} })
    const sp = createSetpointsState({ admission, staleAfterMs: 60_000, clock: () => now })
    now += 120_000
    // Config setpoints are never stale: nobody is expected to refresh them.
    expect(sp.view()).toMatchObject({ source: 'config', stale: false, limit: 20 })
    const put = sp.put({ admission: [{ ...item, maxConcurrency: 2 }], fencingToken: 1, source: 'ctl' })
    expect(put.kind).toBe('ok')
    now += 59_000
    expect(sp.view().stale).toBe(false)
    now += 2_000
    expect(sp.view()).toMatchObject({ stale: true, source: 'ctl', fencingToken: 1, limit: null })
    expect(sp.view().admission[0]!.maxConcurrency).toBe(2)
    expect(sp.put({ admission: [item], fencingToken: 0 })).toEqual({ kind: 'fenced', highest: 1 })
    expect(sp.put({ admission: [item], fencingToken: 2 }).kind).toBe('ok')
    expect(sp.view().stale).toBe(false)
  })
})
