import { describe, expect, it } from 'vitest'
import { formatRoute, parseRoute, takeToken } from '../../dashboard/src/lib/route.js'
import type { ServiceRoute } from '../../dashboard/src/lib/route.js'
import { parseQuantileList, timeRange, TIME_RANGES, withRange } from '../../dashboard/src/lib/time-range.js'
import { routeRange } from '../../dashboard/src/lib/route.js'

describe('parseRoute / formatRoute', () => {
  it('reads the fleet overview for an empty hash, and the service list at #/services', () => {
    for (const h of ['', '#', '#/']) expect(parseRoute(h)).toEqual({ page: 'fleet', range: '1h' })
    for (const h of ['#/services', '#/services/', '#/services?range=6h'])
      expect(parseRoute(h)).toEqual({ page: 'list' })
    expect(formatRoute({ page: 'list' })).toBe('#/services')
    // An unknown path says so instead of silently showing the list.
    expect(parseRoute('#/nope')).toEqual({ page: 'not-found', path: '/nope' })
    expect(parseRoute('#/service/')).toEqual({ page: 'not-found', path: '/service/' })
    expect(formatRoute({ page: 'not-found', path: '/nope' })).toBe('#/nope')
  })

  it('keeps the shared range on the fleet, alerts and GPU pages, and carries it in links', () => {
    expect(parseRoute('#/?range=6h')).toEqual({ page: 'fleet', range: '6h' })
    expect(parseRoute('#/alerts?range=24h')).toEqual({ page: 'alerts', range: '24h' })
    expect(parseRoute('#/alerts?range=2y')).toEqual({ page: 'alerts', range: '1h' })
    expect(formatRoute({ page: 'fleet', range: '1h' })).toBe('#/')
    expect(formatRoute({ page: 'fleet', range: '7d' })).toBe('#/?range=7d')
    expect(formatRoute({ page: 'alerts', range: '5m' })).toBe('#/alerts?range=5m')
    expect(formatRoute({ page: 'gpus', range: '6h' })).toBe('#/gpus?range=6h')
    for (const page of ['#/?range=6h', '#/alerts?range=6h', '#/gpus?range=6h', '#/service/chat?range=6h'])
      expect(routeRange(parseRoute(page))).toBe('6h')
    expect(routeRange(parseRoute('#/slos'))).toBeUndefined()
    expect(withRange('#/slos', '6h')).toBe('#/slos?range=6h')
    expect(withRange('#/?range=6h', '1h')).toBe('#/')
    expect(withRange('#/service/chat?model=a&range=5m', '24h')).toBe('#/service/chat?model=a&range=24h')
    expect(withRange('#/alerts', 'bogus')).toBe('#/alerts')
  })

  it('reads a service route with defaults', () => {
    expect(parseRoute('#/service/chat')).toEqual({
      page: 'service',
      service: 'chat',
      model: '',
      range: '1h',
      phase: 'total',
      quantiles: ['0.5', '0.99'],
    })
  })

  it('round-trips every picker value, including names that need escaping', () => {
    const route: ServiceRoute = {
      page: 'service',
      service: 'chat api/v2',
      model: 'llama 3?&',
      range: '7d',
      phase: 'kernel',
      quantiles: ['0.9', '0.999'],
      split: 'node',
    }
    const hash = formatRoute(route)
    expect(hash.startsWith('#/service/chat%20api%2Fv2?')).toBe(true)
    expect(parseRoute(hash)).toEqual(route)
  })

  it('leaves defaults out of the hash', () => {
    expect(formatRoute(parseRoute('#/service/chat?model=llama&range=1h&phase=total&q=0.5,0.99'))).toBe(
      '#/service/chat?model=llama',
    )
  })

  it('falls back to defaults for bad picker values', () => {
    const r = parseRoute('#/service/chat?range=2y&phase=DROP%20TABLE&q=7') as ServiceRoute
    expect(r.range).toBe('1h')
    expect(r.phase).toBe('total')
    expect(r.quantiles).toEqual(['0.5', '0.99'])
  })

  it('keeps the heatmap split in the hash, and ignores an unknown one', () => {
    expect(parseRoute('#/service/chat?split=replica')).toMatchObject({ split: 'replica' })
    expect(formatRoute(parseRoute('#/service/chat?split=version'))).toBe('#/service/chat?split=version')
    expect(parseRoute('#/service/chat?split=pod')).not.toHaveProperty('split')
  })
})

describe('takeToken', () => {
  it('takes a bare #token= and sends the user to the list', () => {
    expect(takeToken('#token=abc%2Fdef')).toEqual({ token: 'abc/def', hash: '#/' })
  })

  it('keeps a route that follows the token', () => {
    expect(takeToken('#token=abc&/service/chat?model=x')).toEqual({
      token: 'abc',
      hash: '#/service/chat?model=x',
    })
  })

  it('takes a token parameter out of a route query', () => {
    expect(takeToken('#/service/chat?model=x&token=abc&range=5m')).toEqual({
      token: 'abc',
      hash: '#/service/chat?model=x&range=5m',
    })
    expect(takeToken('#/service/chat?token=abc')).toEqual({ token: 'abc', hash: '#/service/chat' })
  })

  it('leaves hashes without a token alone', () => {
    expect(takeToken('#/service/chat?model=x')).toEqual({ token: null, hash: '#/service/chat?model=x' })
    expect(takeToken('')).toEqual({ token: null, hash: '' })
    expect(takeToken('#token=')).toEqual({ token: null, hash: '#/' })
  })
})

describe('time ranges and quantile lists', () => {
  it('offers 5m, 1h, 6h, 24h and 7d with matching relative from values', () => {
    expect(TIME_RANGES.map((r) => r.key)).toEqual(['5m', '1h', '6h', '24h', '7d'])
    for (const r of TIME_RANGES) expect(r.from).toBe(`-${r.key}`)
    const lengths = TIME_RANGES.map((r) => r.durationMs)
    expect([...lengths].sort((a, b) => a - b)).toEqual(lengths)
  })

  it('falls back to 1h for an unknown range', () => {
    expect(timeRange('6h').durationMs).toBe(6 * 3_600_000)
    expect(timeRange(undefined).key).toBe('1h')
  })

  it('keeps known quantiles in picker order', () => {
    expect(parseQuantileList('0.99,0.5,0.5,7')).toEqual(['0.5', '0.99'])
    expect(parseQuantileList('')).toEqual(['0.5', '0.99'])
    expect(parseQuantileList('0.999, 0.9')).toEqual(['0.9', '0.999'])
  })
})
