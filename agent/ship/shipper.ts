import { randomUUID } from 'node:crypto'
import { REPORT_LIMITS, REPORT_VERSION, ReportSeriesSchema, strictValidator } from '../../collector/index.js'
import type { IntervalReport, ReportSeries, SeriesLabels, SeriesSignals } from '../../collector/index.js'
import type { Recorder } from '../recorder.js'
import type { Spool } from './spool.js'
import { fetchOrOwn, redirectNote } from '../proxy/h1-fetch.js'
import type { HttpFetch } from '../proxy/h1-fetch.js'
import { openDeadLetter } from './dead-letter.js'
import type { DeadLetterBox } from './dead-letter.js'

/** Largest report body the agent sends by default: well under the collector's default limit (16 MiB). */
export const DEFAULT_MAX_REPORT_BYTES = 4 * 1024 * 1024

const checkSeries = strictValidator(ReportSeriesSchema)

/** The outcome of one POST of a report: expected failures are values (STYLE.md section 6). */
export type SendResult =
  | { readonly kind: 'acked'; readonly duplicate: boolean }
  | { readonly kind: 'retryable'; readonly reason: string; readonly authStatus?: 401 | 403 }
  | { readonly kind: 'rejected'; readonly status: number; readonly reason: string }

export interface ShipperOptions {
  readonly collectorUrl: string
  readonly token: string
  readonly agentId: string
  readonly node: string
  readonly intervalMs: number
  readonly recorder: Recorder
  readonly spool: Spool
  readonly clock?: () => number
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string) => void
  /** Live signals per series for the interval (the proxy's gauges), attached to the series of the same labels. */
  readonly signals?: () => ReadonlyArray<{ readonly labels: SeriesLabels; readonly signals: SeriesSignals }>
  /** Extra report fields produced per interval (GPU samples). */
  readonly extras?: () => Pick<IntervalReport, 'gpus'>
  /** Retry delays; a refused token (401/403) backs off up to `authMaxMs` (default 60 s), as only a person fixes it. */
  readonly backoff?: { readonly baseMs: number; readonly maxMs: number; readonly authMaxMs?: number }
  readonly requestTimeoutMs?: number
  /** How reports are sent (default: the agent's own HTTP/1.1 client, `createH1Fetch`, closed by `stop`). */
  readonly fetchImpl?: HttpFetch
  /**
   * Where reports the collector refuses as bad (400, 413 for one series, 422) go, with the reason, instead
   * of blocking the reports behind them (default: a memory box of 100).
   */
  readonly deadLetter?: DeadLetterBox
  /** Most series per report; larger intervals are split (default: the collector's limit, 10,000). */
  readonly maxReportSeries?: number
  /** Largest report body, bytes; larger intervals are split (default 4 MiB). */
  readonly maxReportBytes?: number
}

export interface ShipperStats {
  sent: number
  acked: number
  duplicates: number
  rejected: number
  failures: number
  spoolDropped: number
  /** Reports moved to the dead-letter box (refused as bad by the collector). */
  deadLettered: number
  /** Series set aside before sending because they broke the report format (a source's bug). */
  seriesSetAside: number
  /** Extra reports made by splitting large intervals or reports refused with 413. */
  splits: number
  lastError: string | null
  /** 401 or 403 while the collector refuses the agent token (reports stay spooled), else null. */
  authRefused: 401 | 403 | null
}

/**
 * Every interval, drains the recorder into one numbered report, spools it, and sends the spool in order to
 * the collector. A report leaves the spool only when the collector acknowledges it (stored or duplicate),
 * so a collector outage or crash loses nothing, and the collector's dedupe on (instance, seq) means a
 * retry never counts twice. Failures back off exponentially with jitter.
 *
 * @example
 * ```ts
 * const shipper = createShipper({ collectorUrl: 'http://127.0.0.1:7070', token, agentId: 'node-a', node: 'node-a', intervalMs: 5000, recorder, spool })
 * shipper.start(); … await shipper.stop() // flushes the last interval
 * ```
 */
export function createShipper(opts: ShipperOptions) {
  const clock = opts.clock ?? Date.now
  const log = opts.log ?? (() => {})
  const http = fetchOrOwn(opts.fetchImpl)
  const backoff = opts.backoff ?? { baseMs: 500, maxMs: 30_000 }
  const instance = randomUUID()
  const url = new URL('/api/v1/reports', opts.collectorUrl).href
  const stats: ShipperStats = {
    sent: 0,
    acked: 0,
    duplicates: 0,
    rejected: 0,
    failures: 0,
    spoolDropped: 0,
    deadLettered: 0,
    seriesSetAside: 0,
    splits: 0,
    lastError: null,
    authRefused: null,
  }
  const deadLetter = opts.deadLetter ?? openDeadLetter({ dir: null, maxFiles: 100 })
  const maxSeries = Math.min(opts.maxReportSeries ?? REPORT_LIMITS.maxSeries, REPORT_LIMITS.maxSeries)
  const maxBytes = opts.maxReportBytes ?? DEFAULT_MAX_REPORT_BYTES
  let seq = 0
  let intervalStart = clock()
  let timer: NodeJS.Timeout | undefined
  let retryTimer: NodeJS.Timeout | undefined
  let draining: Promise<void> | null = null
  let attempt = 0
  let stopped = false

  /**
   * Closes the current interval into reports (split to the size limits) and spools them. Cuts run one at a
   * time: the recorder encodes in slices with the event loop free in between, so a timer tick can come
   * while the previous cut is still encoding.
   */
  let cutting: Promise<void> = Promise.resolve()
  function cut(): Promise<void> {
    const next = cutting.then(cutNow)
    cutting = next.catch((err: unknown) =>
      log('error', `closing an interval failed: ${(err as Error).message ?? String(err)}`),
    )
    return cutting
  }

  async function cutNow(): Promise<void> {
    const end = clock()
    const drained = await opts.recorder.drainSliced()
    if (opts.signals) attachSignals(drained.series, opts.signals())
    const extras = opts.extras?.() ?? {}
    const hasGpus = (extras.gpus?.length ?? 0) > 0
    const dropped = drained.dropped
    // Never forward what the collector would refuse: a series that breaks the format is set aside alone.
    const series: ReportSeries[] = []
    for (const s of drained.series) {
      const problem = checkSeries(s)
      if (problem === null) series.push(s)
      else {
        stats.seriesSetAside++
        deadLetter.add({
          atMs: clock(),
          status: 0,
          reason: `series${problem.path}: ${problem.message}`,
          payload: { series: s },
        })
        log(
          'error',
          `set aside one series that breaks the report format: series${problem.path}: ${problem.message}`,
        )
      }
    }
    if (series.length > 0 || Object.keys(dropped).length > 0 || hasGpus) {
      const chunks = chunkSeries(series, maxSeries, maxBytes)
      for (const [i, part] of chunks.entries()) {
        const report: IntervalReport = {
          version: REPORT_VERSION,
          agent: { id: opts.agentId, instance, node: opts.node },
          seq: ++seq,
          intervalStartMs: Math.floor(intervalStart),
          intervalEndMs: Math.floor(end),
          series: part,
          ...(i === 0 && Object.keys(dropped).length > 0 ? { dropped } : {}),
          ...(i === 0 && hasGpus ? { gpus: extras.gpus } : {}),
        }
        await spoolReport(report)
      }
      stats.splits += chunks.length - 1
    }
    intervalStart = end
  }

  async function spoolReport(report: IntervalReport): Promise<void> {
    const { dropped: evicted } = await opts.spool.add(report)
    if (evicted > 0) {
      stats.spoolDropped += evicted
      log('warn', `spool over its size limit: dropped the ${evicted} oldest unsent report(s)`)
    }
  }

  /** A report the collector refused as bad: split it when it was too large, else dead-letter it. */
  async function refused(report: IntervalReport, status: number, reason: string): Promise<boolean> {
    if (status === 413 && report.series.length > 1) {
      const half = Math.ceil(report.series.length / 2)
      const { series, ...rest } = report
      await spoolReport({ ...rest, seq: ++seq, series: series.slice(0, half) })
      const { dropped: _d, gpus: _g, ...bare } = rest
      await spoolReport({ ...bare, seq: ++seq, series: series.slice(half) })
      stats.splits++
      log('warn', `collector refused report seq ${report.seq} as too large (413): split it in two`)
      return true
    }
    deadLetter.add({ atMs: clock(), status, reason, payload: report })
    stats.deadLettered++
    log(
      'error',
      `collector rejected report seq ${report.seq} (HTTP ${status}): ${reason}; moved to the dead-letter box, sending the rest`,
    )
    return false
  }

  async function send(body: string): Promise<SendResult> {
    stats.sent++
    try {
      const res = await http.fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${opts.token}` },
        body,
        signal: AbortSignal.timeout(opts.requestTimeoutMs ?? 15_000),
      })
      const text = await res.text()
      if (res.ok) {
        const body = JSON.parse(text) as { status?: string }
        return { kind: 'acked', duplicate: body.status === 'duplicate' }
      }
      // 401/403 may be fixed by rotating a token; 408/425/429 and 5xx are transient. Other 4xx will never succeed.
      if (res.status === 401 || res.status === 403)
        return {
          kind: 'retryable',
          reason: `HTTP ${res.status}: ${text.slice(0, 200)}`,
          authStatus: res.status,
        }
      // A redirect (not followed) is a wrong --collector URL: kept and retried until someone fixes it.
      const redirect = redirectNote(res)
      if (redirect !== null) return { kind: 'retryable', reason: redirect }
      if (res.status >= 500 || [408, 425, 429].includes(res.status))
        return { kind: 'retryable', reason: `HTTP ${res.status}: ${text.slice(0, 200)}` }
      return { kind: 'rejected', status: res.status, reason: text.slice(0, 500) }
    } catch (err) {
      return { kind: 'retryable', reason: (err as Error).message }
    }
  }

  /** Sends every pending report in order; stops at the first retryable failure and schedules a retry. */
  async function drainSpool(): Promise<void> {
    let resplit = false
    for (const item of opts.spool.pending()) {
      if (stopped && retryTimer) return
      const result = await send(item.body)
      switch (result.kind) {
        case 'acked':
          opts.spool.remove(item.key)
          stats.acked++
          if (result.duplicate) stats.duplicates++
          attempt = 0
          if (stats.authRefused !== null) {
            log('info', 'collector accepts the agent token again: sending the spooled reports')
            stats.authRefused = null
          }
          break
        case 'rejected':
          opts.spool.remove(item.key)
          stats.rejected++
          stats.lastError = result.reason
          if (await refused(item.report, result.status, result.reason)) resplit = true
          break
        case 'retryable': {
          stats.failures++
          stats.lastError = result.reason
          attempt++
          const maxMs = result.authStatus ? (backoff.authMaxMs ?? 60_000) : backoff.maxMs
          const cap = Math.min(maxMs, backoff.baseMs * 2 ** Math.min(attempt - 1, 20))
          const delay = cap / 2 + Math.random() * (cap / 2)
          if (result.authStatus) {
            // One line when the refusal starts (not one per retry); /healthz shows it for as long as it lasts.
            if (stats.authRefused !== result.authStatus)
              log(
                'error',
                `collector refused the agent token (${result.authStatus}): check TAILGUARD_AGENT_TOKEN; ${opts.spool.size} report(s) kept in the spool, retrying with backoff up to ${Math.round(maxMs / 1000)} s`,
              )
            stats.authRefused = result.authStatus
          } else if (attempt === 1 || attempt % 10 === 0)
            log(
              'warn',
              `sending to ${opts.collectorUrl} failed (${result.reason}); ${opts.spool.size} report(s) spooled, retrying in ${Math.round(delay)} ms`,
            )
          if (!stopped) {
            retryTimer = setTimeout(() => {
              retryTimer = undefined
              kick()
            }, delay)
            retryTimer.unref()
          }
          return
        }
      }
    }
    // The halves of a report split after a 413 are in the spool now: send them in this same pass.
    if (resplit) await drainSpool()
  }

  function kick(): void {
    if (draining || retryTimer) return
    draining = drainSpool()
      // A spool that cannot take the halves of a split report (a full disk): said, and tried again next time.
      .catch((err: unknown) => {
        stats.lastError = `spooling failed: ${(err as Error).message}`
        log('error', stats.lastError)
      })
      .finally(() => {
        draining = null
      })
  }

  return {
    instance,
    stats,
    start(): void {
      intervalStart = clock()
      kick() // resend what a previous run left in the spool
      timer = setInterval(() => {
        void cut().then(kick)
      }, opts.intervalMs)
      timer.unref()
    },
    /** Cuts the current interval now and tries to send everything (used at shutdown and in tests). */
    async flush(): Promise<void> {
      await cut()
      if (retryTimer) {
        clearTimeout(retryTimer)
        retryTimer = undefined
      }
      if (draining) await draining
      await drainSpool()
    },
    /** Stops the timers after one last flush attempt; unsent reports stay in the spool for the next run. */
    async stop(): Promise<void> {
      if (timer) clearInterval(timer)
      timer = undefined
      stopped = true
      await cut()
      if (retryTimer) clearTimeout(retryTimer)
      retryTimer = undefined
      if (draining) await draining
      if (opts.spool.size > 0) await drainSpool()
      if (retryTimer) clearTimeout(retryTimer)
      await http.close()
    },
  }
}

export type Shipper = ReturnType<typeof createShipper>

const sameLabels = (a: SeriesLabels, b: SeriesLabels) =>
  a.service === b.service &&
  a.model === b.model &&
  a.version === b.version &&
  a.replica === b.replica &&
  a.node === b.node

/** Puts each signal set on the series of its labels, adding a series (no requests) where there is none. */
function attachSignals(
  series: ReportSeries[],
  items: ReadonlyArray<{ readonly labels: SeriesLabels; readonly signals: SeriesSignals }>,
): void {
  for (const { labels, signals } of items) {
    const s = series.find((x) => sameLabels(x.labels, labels))
    if (s)
      s.signals = s.signals
        ? {
            ...s.signals,
            ...signals,
            gauges: { ...s.signals.gauges, ...signals.gauges },
            sources: [...new Set([...(s.signals.sources ?? []), ...(signals.sources ?? [])])],
          }
        : signals
    else
      series.push({ labels: { ...labels }, histograms: {}, requests: { ok: 0, error: 0, shed: 0 }, signals })
  }
}

/**
 * Splits an interval's series into reports of at most `maxSeries` series and about `maxBytes` of JSON each
 * (a single series larger than `maxBytes` goes alone). Always returns at least one (possibly empty) part.
 *
 * @example chunkSeries(series, 10_000, 4 << 20) // [[…10,000], […rest]]
 */
export function chunkSeries(
  series: readonly ReportSeries[],
  maxSeries: number,
  maxBytes: number,
): ReportSeries[][] {
  const out: ReportSeries[][] = []
  let part: ReportSeries[] = []
  let bytes = 1024 // the report's envelope, dropped counts and GPUs ride on the first part
  for (const s of series) {
    const size = JSON.stringify(s).length + 1
    if (part.length > 0 && (part.length >= maxSeries || bytes + size > maxBytes)) {
      out.push(part)
      part = []
      bytes = 1024
    }
    part.push(s)
    bytes += size
  }
  out.push(part)
  return out
}
