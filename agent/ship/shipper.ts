import { randomUUID } from 'node:crypto'
import { REPORT_VERSION } from '../../collector/index.js'
import type { IntervalReport } from '../../collector/index.js'
import type { Recorder } from '../recorder.js'
import type { Spool } from './spool.js'

/** The outcome of one POST of a report: expected failures are values (STYLE.md section 6). */
export type SendResult =
  | { readonly kind: 'acked'; readonly duplicate: boolean }
  | { readonly kind: 'retryable'; readonly reason: string }
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
  /** Extra report fields produced per interval (GPU samples). */
  readonly extras?: () => Pick<IntervalReport, 'gpus'>
  readonly backoff?: { readonly baseMs: number; readonly maxMs: number }
  readonly requestTimeoutMs?: number
  readonly fetchImpl?: typeof fetch
}

export interface ShipperStats {
  sent: number
  acked: number
  duplicates: number
  rejected: number
  failures: number
  spoolDropped: number
  lastError: string | null
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
  const doFetch = opts.fetchImpl ?? fetch
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
    lastError: null,
  }
  let seq = 0
  let intervalStart = clock()
  let timer: NodeJS.Timeout | undefined
  let retryTimer: NodeJS.Timeout | undefined
  let draining: Promise<void> | null = null
  let attempt = 0
  let stopped = false

  /** Closes the current interval into a report and spools it. */
  function cut(): void {
    const end = clock()
    const { series, dropped } = opts.recorder.drain()
    const extras = opts.extras?.() ?? {}
    const hasGpus = (extras.gpus?.length ?? 0) > 0
    if (series.length > 0 || Object.keys(dropped).length > 0 || hasGpus) {
      const report: IntervalReport = {
        version: REPORT_VERSION,
        agent: { id: opts.agentId, instance, node: opts.node },
        seq: ++seq,
        intervalStartMs: Math.floor(intervalStart),
        intervalEndMs: Math.floor(end),
        series,
        ...(Object.keys(dropped).length > 0 ? { dropped } : {}),
        ...(hasGpus ? { gpus: extras.gpus } : {}),
      }
      const { dropped: evicted } = opts.spool.add(report)
      if (evicted > 0) {
        stats.spoolDropped += evicted
        log('warn', `spool over its size limit: dropped the ${evicted} oldest unsent report(s)`)
      }
    }
    intervalStart = end
  }

  async function send(report: IntervalReport): Promise<SendResult> {
    stats.sent++
    try {
      const res = await doFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${opts.token}` },
        body: JSON.stringify(report),
        signal: AbortSignal.timeout(opts.requestTimeoutMs ?? 15_000),
      })
      const text = await res.text()
      if (res.ok) {
        const body = JSON.parse(text) as { status?: string }
        return { kind: 'acked', duplicate: body.status === 'duplicate' }
      }
      // 401/403 may be fixed by rotating a token; 408/425/429 and 5xx are transient. Other 4xx will never succeed.
      if (res.status >= 500 || [401, 403, 408, 425, 429].includes(res.status))
        return { kind: 'retryable', reason: `HTTP ${res.status}: ${text.slice(0, 200)}` }
      return { kind: 'rejected', status: res.status, reason: text.slice(0, 500) }
    } catch (err) {
      return { kind: 'retryable', reason: (err as Error).message }
    }
  }

  /** Sends every pending report in order; stops at the first retryable failure and schedules a retry. */
  async function drainSpool(): Promise<void> {
    for (const item of opts.spool.pending()) {
      if (stopped && retryTimer) return
      const result = await send(item.report)
      switch (result.kind) {
        case 'acked':
          opts.spool.remove(item.key)
          stats.acked++
          if (result.duplicate) stats.duplicates++
          attempt = 0
          break
        case 'rejected':
          opts.spool.remove(item.key)
          stats.rejected++
          stats.lastError = result.reason
          log(
            'error',
            `collector rejected report seq ${item.report.seq} (HTTP ${result.status}): ${result.reason}`,
          )
          break
        case 'retryable': {
          stats.failures++
          stats.lastError = result.reason
          attempt++
          const cap = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(attempt - 1, 20))
          const delay = cap / 2 + Math.random() * (cap / 2)
          if (attempt === 1 || attempt % 10 === 0)
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
  }

  function kick(): void {
    if (draining || retryTimer) return
    draining = drainSpool().finally(() => {
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
        cut()
        kick()
      }, opts.intervalMs)
      timer.unref()
    },
    /** Cuts the current interval now and tries to send everything (used at shutdown and in tests). */
    async flush(): Promise<void> {
      cut()
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
      cut()
      if (retryTimer) clearTimeout(retryTimer)
      retryTimer = undefined
      if (draining) await draining
      if (opts.spool.size > 0) await drainSpool()
      if (retryTimer) clearTimeout(retryTimer)
    },
  }
}

export type Shipper = ReturnType<typeof createShipper>
