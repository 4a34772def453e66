import type { SeriesLabels } from '../../../collector/index.js'
import type { DurationMs, SampleSink, Source, SourceStatus } from '../../types.js'
import { parsePromText } from '../../gpu/prom-text.js'
import { failureNote, fetchOrOwn } from '../../proxy/h1-fetch.js'
import type { HttpFetch } from '../../proxy/h1-fetch.js'
import { periodic } from '../periodic.js'
import { SCRAPE_KINDS } from './adapters.js'
import type { ScrapeKind, ServerKind } from './adapters.js'
import { diffSnapshots } from './delta.js'
import { detectKind, readExposition } from './read.js'
import type { Snapshot } from './read.js'

/** One server to scrape: its URL, its kind (or `auto`), and the labels its series get. */
export interface ScrapeTarget {
  readonly url: string
  readonly kind: ScrapeKind | 'auto'
  /** Default: the model the server names (vLLM/SGLang `model_name`, Triton `model`), else the kind. */
  readonly service?: string
  /** Default: the model label the server exports. */
  readonly model?: string
  /** Default: Triton's `version` label, else empty. */
  readonly version?: string
  /** Default: the target's host:port. */
  readonly replica?: string
  /** Scrape period (default 5000 ms). */
  readonly periodMs?: number
  /**
   * Whether the server's request counters count as requests of its series (default true). False for a server
   * behind this agent's proxy, which counts the same requests itself: counted twice, every rate would double.
   */
  readonly countRequests?: boolean
}

/**
 * Reads a `--scrape` argument: `URL` (kind detected from what the server exports) or `KIND=URL` with KIND one of
 * vllm, triton, tgi, sglang, dcgm. Returns the problem as a string when it is neither.
 *
 * @example parseScrapeArg('vllm=http://127.0.0.1:8000/metrics') // { kind: 'vllm', url: 'http://127.0.0.1:8000/metrics' }
 */
export function parseScrapeArg(text: string): ScrapeTarget | string {
  const m = /^([a-z]+)=(.*)$/.exec(text)
  const kind = m ? m[1]! : 'auto'
  const url = m ? m[2]! : text
  if (kind !== 'auto' && !(SCRAPE_KINDS as readonly string[]).includes(kind))
    return `unknown kind '${kind}' in '${text}': expected URL or KIND=URL with KIND one of ${SCRAPE_KINDS.join(', ')}`
  if (!/^https?:\/\/[^/]+/.test(url)) return `'${url}' is not an http(s) URL (in '${text}')`
  return { url, kind: kind as ScrapeKind | 'auto' }
}

/** The default label of a target's replica: its host and port. @example replicaOf('http://10.0.0.7:8000/metrics') // '10.0.0.7:8000' */
export const replicaOf = (url: string): string => {
  try {
    return new URL(url).host
  } catch {
    return url
  }
}

/** What one scrape did, for the agent's own metrics and logs. */
export interface ScrapeOutcome {
  readonly target: string
  readonly ok: boolean
  readonly durationMs: number
  readonly series: number
  readonly unknown: number
  readonly events: number
}

export interface ScrapeSourceOptions {
  /** The node label of every series. */
  readonly node: string
  /** How `/metrics` is fetched (default: the agent's own HTTP/1.1 client, closed by `stop`). */
  readonly fetch?: HttpFetch
  readonly clock?: () => number
  /** Per-scrape timeout (default min(period, 5000) ms). */
  readonly timeoutMs?: DurationMs
  readonly log?: (level: 'info' | 'warn', line: string) => void
  readonly onScrape?: (outcome: ScrapeOutcome) => void
}

/**
 * A source that scrapes one model server's `/metrics` every period, maps it with the server's adapter and records,
 * per model, the gauges, counter increases, bucket-histogram increments and request counts (`recordSignals`).
 * A server that stops answering makes the source `unavailable` with the reason (logged once) until it answers
 * again; counter resets, changed bucket layouts, vanished series and unknown names are logged, never thrown.
 *
 * @example
 * ```ts
 * const vllm = createScrapeSource({ url: 'http://127.0.0.1:8000/metrics', kind: 'vllm', service: 'chat' }, { node: 'gpu-1' })
 * await vllm.start(recorder) … await vllm.stop()
 * ```
 */
export function createScrapeSource(target: ScrapeTarget, options: ScrapeSourceOptions): Source {
  const every = target.periodMs ?? 5000
  const timeoutMs = options.timeoutMs ?? Math.min(every, 5000)
  const http = fetchOrOwn(options.fetch)
  const clock = options.clock ?? Date.now
  const log = options.log ?? (() => {})
  const replica = target.replica ?? replicaOf(target.url)
  let kind: ServerKind | null = target.kind === 'auto' || target.kind === 'dcgm' ? null : target.kind
  let status: SourceStatus = { state: 'unavailable', reason: `not scraped yet (${target.url})` }
  let prev: Snapshot | null = null
  let sink: SampleSink | undefined
  const unknownSeen = new Set<string>()

  const fail = (reason: string) => {
    if (status.state === 'ok' || status.reason !== reason) log('warn', `scrape ${target.url}: ${reason}`)
    status = { state: 'unavailable', reason }
  }

  const labelsOf = (model: string, version: string, k: ServerKind): SeriesLabels => ({
    service: target.service ?? (model || k),
    model: target.model ?? model,
    version: target.version ?? version,
    replica,
    node: options.node,
  })

  const scrape = async () => {
    const started = clock()
    let text: string
    try {
      const res = await http.fetch(target.url, {
        signal: AbortSignal.timeout(timeoutMs),
        headers: { accept: 'text/plain;version=0.0.4' },
      })
      if (!res.ok) throw new Error(failureNote(res))
      text = await res.text()
    } catch (err) {
      fail(`not answering: ${(err as Error).message}`)
      options.onScrape?.({
        target: target.url,
        ok: false,
        durationMs: clock() - started,
        series: 0,
        unknown: 0,
        events: 0,
      })
      return
    }
    if (kind === null) {
      const detected = target.kind === 'dcgm' ? 'dcgm' : detectKind(parsePromText(text).samples)
      if (detected === null || detected === 'dcgm') {
        fail(
          detected === 'dcgm'
            ? 'this is DCGM exporter: give it as dcgm=URL (a GPU source), not as a model server'
            : 'no vLLM, Triton, TGI or SGLang metrics found',
        )
        options.onScrape?.({
          target: target.url,
          ok: false,
          durationMs: clock() - started,
          series: 0,
          unknown: 0,
          events: 0,
        })
        return
      }
      kind = detected
      log('info', `scrape ${target.url}: detected ${kind}`)
    }
    const snap = readExposition(text, kind)
    if (snap.models.size === 0) {
      fail(`no ${kind} series with values (metrics disabled, or nothing served yet)`)
      options.onScrape?.({
        target: target.url,
        ok: false,
        durationMs: clock() - started,
        series: 0,
        unknown: snap.unknown.length,
        events: 0,
      })
      return
    }
    for (const name of snap.unknown)
      if (!unknownSeen.has(name)) {
        unknownSeen.add(name)
        log('info', `scrape ${target.url}: unknown ${kind} metric ${name} (not mapped; see docs/scrape.md)`)
      }
    const delta = diffSnapshots(prev, snap)
    for (const e of delta.events) log('warn', `scrape ${target.url}: ${e}`)
    for (const o of delta.observations) {
      let observation = o.observation
      if (target.countRequests === false) {
        const { requests: _counted, ...rest } = observation
        observation = rest
      }
      sink?.recordSignals?.(labelsOf(o.model, o.version, kind), observation)
    }
    prev = snap
    if (status.state !== 'ok')
      log('info', `scrape ${target.url}: ${kind} answering (${snap.models.size} series)`)
    status = { state: 'ok' }
    options.onScrape?.({
      target: target.url,
      ok: true,
      durationMs: clock() - started,
      series: snap.models.size,
      unknown: snap.unknown.length,
      events: delta.events.length,
    })
  }

  const poll = periodic(scrape, every)

  return {
    name: `scrape:${target.kind === 'auto' ? 'auto' : target.kind} ${target.url}`,
    status: () => status,
    start(s) {
      sink = s
      poll.start()
    },
    async stop() {
      await poll.stop()
      await http.close()
    },
  }
}
