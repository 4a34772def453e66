// The bookkeeping behind the dashboard's early GETs (dashboard/src/lib/early-requests.ts): the fleet page's first
// requests leave before React renders, and the page's own first request takes the one in flight instead of sending
// a second. test/dashboard/fleet-load.e2e.test.ts checks the whole of it in Chromium against the real collector
// (one request for the figures per load).
import { describe, expect, it } from 'vitest'
import { EarlyRequests } from '../../dashboard/src/lib/early-requests.js'

describe('EarlyRequests', () => {
  it('hands a request to the first taker with the same key and token, once', async () => {
    const early = new EarlyRequests<string>(5000, () => 0)
    early.put('fleet?from=-1h&to=now', 'tok', Promise.resolve('answer'))
    expect(early.take('fleet?from=-6h&to=now', 'tok')).toBeUndefined()
    expect(await early.take('fleet?from=-1h&to=now', 'tok')).toBe('answer')
    expect(early.take('fleet?from=-1h&to=now', 'tok')).toBeUndefined()
  })

  it('gives nothing for another token, or after the maximum age, and drops it either way', () => {
    let now = 1000
    const early = new EarlyRequests<string>(5000, () => now)
    early.put('slos', 'tok', Promise.resolve('a'))
    expect(early.take('slos', 'other')).toBeUndefined()
    expect(early.take('slos', 'tok')).toBeUndefined()
    early.put('slos', 'tok', Promise.resolve('b'))
    now += 5000
    expect(early.take('slos', 'tok')).toBeDefined()
    early.put('slos', 'tok', Promise.resolve('c'))
    now += 5001
    expect(early.take('slos', 'tok')).toBeUndefined()
  })

  it('leaves no unhandled rejection when a request fails and nobody takes it', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      new EarlyRequests<string>(5000).put('fleet', 'tok', Promise.reject(new TypeError('network down')))
      await new Promise((r) => setTimeout(r, 20))
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(unhandled).toEqual([])
  })
})
