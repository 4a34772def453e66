/**
 * Hash routes of the dashboard (no router dependency): `#/` is the fleet overview, `#/services` the service list,
 * `#/alerts` the alerts page,
 * `#/service/<name>?model=…&range=1h&phase=total&q=0.5,0.99&split=replica` a service's detail page, `#/slos` the SLO list
 * and `#/slos/<name>` one SLO, `#/controllers` the controlled targets and `#/controllers/<target>` one of them.
 * The API token may arrive
 * in the fragment once (`#token=…`); {@link takeToken} lifts it out so it never stays in the address bar.
 *
 * @example
 * ```ts
 * parseRoute('#/service/chat?model=llama') // { page: 'service', service: 'chat', model: 'llama', range: '1h', … }
 * ```
 */
import { DEFAULT_QUANTILES, parseQuantileList, timeRange } from './time-range.js'

/** The list of services. */
export interface ListRoute {
  readonly page: 'list'
}

/** The fleet overview (the landing page), with the shared time range. */
export interface FleetRoute {
  readonly page: 'fleet'
  readonly range: string
}

/** The alerts page: alerts, silences and webhook deliveries, with the shared time range. */
export interface AlertsRoute {
  readonly page: 'alerts'
  readonly range: string
}

/** One service (optionally one model of it) with the detail page's pickers. */
export interface ServiceRoute {
  readonly page: 'service'
  readonly service: string
  /** Empty string: every model of the service. */
  readonly model: string
  readonly range: string
  readonly phase: string
  readonly quantiles: readonly string[]
  /** The label every chart is split by (one line, and one heatmap, per value); absent: the whole service. */
  readonly split?: SplitLabel
}

/** The labels a service page's charts can be split by. */
export const SPLIT_LABELS = ['replica', 'node', 'version'] as const
export type SplitLabel = (typeof SPLIT_LABELS)[number]

/** The list of SLOs. */
export interface SlosRoute {
  readonly page: 'slos'
}

/** One SLO's detail page. */
export interface SloRoute {
  readonly page: 'slo'
  readonly name: string
}

/** The GPU page, with the range of its charts. */
export interface GpuRoute {
  readonly page: 'gpus'
  readonly range: string
}

/** A path the dashboard has no page for: the page says so (with a link back) instead of showing the list. */
export interface NotFoundRoute {
  readonly page: 'not-found'
  /** The path as it was asked for, e.g. `/servces`. */
  readonly path: string
}

/** The list of controlled targets. */
export interface ControllersRoute {
  readonly page: 'controllers'
}

/** One controlled target: its decision timeline over a range, and the service its charts read when the name does not say. */
export interface ControllerRoute {
  readonly page: 'controller'
  readonly target: string
  readonly range: string
  /** Empty string: the service the target's name gives. */
  readonly service: string
}

/** The what-if page: simulate a load under several policies and compare them. */
export interface WhatifRoute {
  readonly page: 'whatif'
}

export type Route =
  | ListRoute
  | FleetRoute
  | AlertsRoute
  | ServiceRoute
  | SlosRoute
  | SloRoute
  | GpuRoute
  | NotFoundRoute
  | ControllersRoute
  | ControllerRoute
  | WhatifRoute

/** Defaults of a service route's pickers. */
export const SERVICE_ROUTE_DEFAULTS = { range: '1h', phase: 'total', quantiles: DEFAULT_QUANTILES } as const

/**
 * Reads a location hash into a route: the list for an empty path, `not-found` for a path without a page.
 *
 * @example parseRoute('#/service/chat?range=5m').range // '5m'
 */
export function parseRoute(hash: string): Route {
  const text = hash.replace(/^#/, '')
  const [path = '', query = ''] = text.split('?', 2)
  const slo = parseSloPath(path)
  if (slo) return slo
  if (/^\/whatif\/?$/.test(path)) return { page: 'whatif' }
  const controller = parseControllerPath(path, query)
  if (controller) return controller
  const ranged = parseRangedPath(path, query)
  if (ranged) return ranged
  const m = /^\/service\/([^/]+)\/?$/.exec(path)
  if (!m) return /^\/services\/?$/.test(path) ? { page: 'list' } : { page: 'not-found', path }
  let service: string
  try {
    service = decodeURIComponent(m[1] as string)
  } catch {
    return { page: 'list' }
  }
  const params = new URLSearchParams(query)
  const phase = params.get('phase')
  return {
    page: 'service',
    service,
    model: params.get('model') ?? '',
    range: timeRange(params.get('range')).key,
    phase: phase && /^[a-z0-9_]{1,32}$/.test(phase) ? phase : SERVICE_ROUTE_DEFAULTS.phase,
    quantiles: parseQuantileList(params.get('q')),
    ...splitParam(params.get('split')),
  }
}

function splitParam(text: string | null): { split?: SplitLabel } {
  const split = SPLIT_LABELS.find((l) => l === text)
  return split ? { split } : {}
}

/** The pages whose only parameter is the shared range: `/` (fleet), `/alerts`, `/gpus`. */
function parseRangedPath(path: string, query: string): FleetRoute | AlertsRoute | GpuRoute | undefined {
  const range = () => timeRange(new URLSearchParams(query).get('range')).key
  if (path === '' || path === '/') return { page: 'fleet', range: range() }
  if (/^\/alerts\/?$/.test(path)) return { page: 'alerts', range: range() }
  if (/^\/gpus\/?$/.test(path)) return { page: 'gpus', range: range() }
  return undefined
}

/** `/slos` and `/slos/<name>`; undefined for any other path. */
function parseSloPath(path: string): SlosRoute | SloRoute | undefined {
  if (/^\/slos\/?$/.test(path)) return { page: 'slos' }
  const m = /^\/slos\/([^/]+)\/?$/.exec(path)
  if (!m) return undefined
  try {
    return { page: 'slo', name: decodeURIComponent(m[1] as string) }
  } catch {
    return { page: 'slos' }
  }
}

/** `/controllers` and `/controllers/<target>?range=&service=`; undefined for any other path. */
function parseControllerPath(path: string, query: string): ControllersRoute | ControllerRoute | undefined {
  if (/^\/controllers\/?$/.test(path)) return { page: 'controllers' }
  const m = /^\/controllers\/([^/]+)\/?$/.exec(path)
  if (!m) return undefined
  let target: string
  try {
    target = decodeURIComponent(m[1] as string)
  } catch {
    return { page: 'controllers' }
  }
  const params = new URLSearchParams(query)
  return {
    page: 'controller',
    target,
    range: timeRange(params.get('range')).key,
    service: params.get('service') ?? '',
  }
}

/**
 * Writes a route as a location hash; picker values equal to their defaults are left out.
 *
 * @example formatRoute({ page: 'service', service: 'chat', model: 'llama', range: '1h', phase: 'total', quantiles: ['0.5', '0.99'] }) // '#/service/chat?model=llama'
 */
export function formatRoute(route: Route): string {
  if (route.page === 'list') return '#/services'
  if (route.page === 'not-found') return `#${route.path}`
  if (route.page === 'slos') return '#/slos'
  if (route.page === 'slo') return `#/slos/${encodeURIComponent(route.name)}`
  if (route.page === 'controllers') return '#/controllers'
  if (route.page === 'whatif') return '#/whatif'
  if (route.page === 'controller') {
    const params = new URLSearchParams()
    if (route.range !== SERVICE_ROUTE_DEFAULTS.range) params.set('range', route.range)
    if (route.service) params.set('service', route.service)
    const query = params.toString()
    return `#/controllers/${encodeURIComponent(route.target)}${query ? `?${query}` : ''}`
  }
  if (route.page === 'gpus' || route.page === 'fleet' || route.page === 'alerts') {
    const path = route.page === 'fleet' ? '#/' : `#/${route.page}`
    return route.range === SERVICE_ROUTE_DEFAULTS.range ? path : `${path}?range=${route.range}`
  }
  const params = new URLSearchParams()
  if (route.model) params.set('model', route.model)
  if (route.range !== SERVICE_ROUTE_DEFAULTS.range) params.set('range', route.range)
  if (route.phase !== SERVICE_ROUTE_DEFAULTS.phase) params.set('phase', route.phase)
  const q = route.quantiles.join(',')
  if (q !== SERVICE_ROUTE_DEFAULTS.quantiles.join(',')) params.set('q', q)
  if (route.split) params.set('split', route.split)
  const query = params.toString()
  return `#/service/${encodeURIComponent(route.service)}${query ? `?${query}` : ''}`
}

/**
 * Lifts an API token out of a location hash. Accepts `#token=…` (optionally followed by `&/route…`) and a
 * `token=` parameter inside a route's query (`#/service/chat?token=…`). Returns the token (or `null`) and
 * the hash to put back in the address bar without it.
 *
 * @example takeToken('#token=abc') // { token: 'abc', hash: '#/' }
 */
export function takeToken(hash: string): { token: string | null; hash: string } {
  const text = hash.replace(/^#/, '')
  if (text.startsWith('token=')) {
    const amp = text.indexOf('&')
    const raw = amp === -1 ? text.slice(6) : text.slice(6, amp)
    const rest = amp === -1 ? '' : text.slice(amp + 1)
    return { token: decodeToken(raw), hash: rest.startsWith('/') ? `#${rest}` : '#/' }
  }
  const [path = '', query] = text.split('?', 2)
  if (query === undefined) return { token: null, hash }
  const params = new URLSearchParams(query)
  const token = params.get('token')
  if (token === null) return { token: null, hash }
  params.delete('token')
  const rest = params.toString()
  return { token: token === '' ? null : token, hash: `#${path}${rest ? `?${rest}` : ''}` }
}

function decodeToken(raw: string): string | null {
  try {
    const t = decodeURIComponent(raw).trim()
    return t === '' ? null : t
  } catch {
    return null
  }
}

/**
 * The shared time range a route carries, or undefined for pages without one (SLOs, which use their own window).
 *
 * @example routeRange(parseRoute('#/alerts?range=6h')) // '6h'
 */
export function routeRange(route: Route): string | undefined {
  return 'range' in route ? route.range : undefined
}
