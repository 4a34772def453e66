/**
 * Webhook notifications: Alertmanager (version 4) or Slack-compatible bodies, HMAC-SHA256 signatures,
 * and at-least-once delivery from the database outbox with exponential backoff and jitter.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { Severity } from './math.js'
import type { SloPersistence } from './persistence.js'

/** Where notifications go. The secret is used only to sign and is never logged. */
export interface WebhookReceiver {
  readonly name: string
  readonly url: string
  /** Signs each request (`X-Tailguard-Signature`) when set. */
  readonly secret?: string
  /** `alertmanager` (default): the Alertmanager webhook payload, version 4. `slack`: `{ text, attachments }`. */
  readonly format?: 'alertmanager' | 'slack'
  /** Only alerts of these severities (default: all). */
  readonly severities?: readonly Severity[]
  /** Per-request timeout; default 10 s. */
  readonly timeoutMs?: number
  /** First retry delay; default 1 s. Each retry doubles it, up to maxBackoffMs (default 5 min), with jitter. */
  readonly minBackoffMs?: number
  readonly maxBackoffMs?: number
  /** A notification older than this is given up and recorded as failed; default 24 h. */
  readonly maxAgeMs?: number
}

/** One alert notification, before formatting. */
export interface AlertNotification {
  readonly status: 'firing' | 'resolved'
  readonly slo: string
  readonly tier: string
  readonly severity: Severity
  readonly labels: Readonly<Record<string, string>>
  readonly summary: string
  readonly description: string
  readonly startsAtMs: number
  readonly endsAtMs: number | null
  /** Stable per notification: the same alert episode and status always give the same key. */
  readonly idempotencyKey: string
}

export const SIGNATURE_HEADER = 'x-tailguard-signature'
export const IDEMPOTENCY_HEADER = 'idempotency-key'

/**
 * The signature header value: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
 *
 * @example signatureHeader('s3cret', '{"a":1}', 1767225600) // 't=1767225600,v1=…'
 */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')
  return `t=${unixSeconds},v1=${mac}`
}

/**
 * Verifies a signature header as a receiver would (constant-time compare; rejects timestamps more than
 * `toleranceSeconds` from `nowSeconds`).
 *
 * @example verifySignature('s3cret', req.headers['x-tailguard-signature'], rawBody, Date.now() / 1000)
 */
export function verifySignature(
  secret: string,
  header: string | undefined,
  body: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  if (!header) return false
  const parts = new Map(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]))
  const t = Number(parts.get('t'))
  const v1 = parts.get('v1')
  if (!Number.isInteger(t) || !v1 || !/^[0-9a-f]{64}$/.test(v1)) return false
  if (Math.abs(nowSeconds - t) > toleranceSeconds) return false
  const want = Buffer.from(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'))
  return timingSafeEqual(want, Buffer.from(v1))
}

const iso = (ms: number | null) => (ms === null ? '0001-01-01T00:00:00Z' : new Date(ms).toISOString())

/**
 * The Alertmanager webhook payload (version 4) for one notification.
 *
 * @example JSON.stringify(alertmanagerPayload(n, 'ops', 'http://tailguard:8080'))
 */
export function alertmanagerPayload(n: AlertNotification, receiver: string, externalUrl: string) {
  const labels: Record<string, string> = {
    alertname: 'SLOBurnRate',
    ...n.labels,
    slo: n.slo,
    tier: n.tier,
    severity: n.severity,
  }
  const groupLabels = { alertname: 'SLOBurnRate', slo: n.slo }
  const fingerprint = createHash('sha256').update(`${n.slo}\u0000${n.tier}`).digest('hex').slice(0, 16)
  const annotations = { summary: n.summary, description: n.description }
  return {
    version: '4',
    groupKey: `{}:{alertname="SLOBurnRate", slo="${n.slo}"}`,
    truncatedAlerts: 0,
    status: n.status,
    receiver,
    groupLabels,
    commonLabels: labels,
    commonAnnotations: annotations,
    externalURL: externalUrl,
    alerts: [
      {
        status: n.status,
        labels,
        annotations,
        startsAt: iso(n.startsAtMs),
        endsAt: iso(n.endsAtMs),
        generatorURL: `${externalUrl}/api/v1/slos/${encodeURIComponent(n.slo)}`,
        fingerprint,
      },
    ],
  }
}

/**
 * A Slack-compatible incoming-webhook body.
 *
 * @example slackPayload(n).text // ':rotating_light: [FIRING] chat-latency page-1h: …'
 */
export function slackPayload(n: AlertNotification) {
  const firing = n.status === 'firing'
  return {
    text: `${firing ? ':rotating_light: [FIRING]' : ':white_check_mark: [RESOLVED]'} ${n.slo} ${n.tier} (${n.severity}): ${n.summary}`,
    attachments: [{ color: firing ? 'danger' : 'good', text: n.description }],
  }
}

/**
 * The body a receiver gets for a notification, in the receiver's format.
 *
 * @example formatFor({ name: 'ops', url }, notification, 'http://tailguard:8080') // Alertmanager v4 JSON
 */
export function formatFor(r: WebhookReceiver, n: AlertNotification, externalUrl: string): string {
  return JSON.stringify(r.format === 'slack' ? slackPayload(n) : alertmanagerPayload(n, r.name, externalUrl))
}

/**
 * Delay before retry number `attempt` (1-based): `min × 2^(attempt−1)`, capped at `max`, then scaled by a
 * jitter factor in [0.5, 1).
 *
 * @example backoffMs(3, 1000, 60_000, () => 0.5) // 3000
 */
export function backoffMs(attempt: number, minMs: number, maxMs: number, random: () => number): number {
  const raw = Math.min(maxMs, minMs * 2 ** Math.max(0, attempt - 1))
  return Math.round(raw * (0.5 + random() / 2))
}

/** What one delivery pass did. */
export interface DeliveryResult {
  delivered: number
  retried: number
  failed: number
}

/** Logger the dispatcher writes to (pino-compatible subset). */
export interface SloLogger {
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
}

/**
 * Sends due outbox rows, oldest first per receiver. A receiver's queue stops at the first row that is not
 * yet due or fails, so notifications arrive in order; a row older than `maxAgeMs` is given up (recorded
 * with its last error) and the queue moves on.
 *
 * @example await deliverDue(persistence, receivers, Date.now(), { random: Math.random, logger })
 */
export async function deliverDue(
  persistence: SloPersistence,
  receivers: readonly WebhookReceiver[],
  nowMs: number,
  opts: { readonly random: () => number; readonly logger: SloLogger; readonly fetch?: typeof fetch },
): Promise<DeliveryResult> {
  const result: DeliveryResult = { delivered: 0, retried: 0, failed: 0 }
  const doFetch = opts.fetch ?? fetch
  await Promise.all(
    receivers.map(async (r) => {
      for (let guard = 0; guard < 1000; guard++) {
        const row = await persistence.nextPending(r.name)
        if (!row || row.nextAttemptMs > nowMs) return
        if (nowMs - row.createdMs > (r.maxAgeMs ?? 24 * 3_600_000)) {
          await persistence.markFailed(row.seq, nowMs, row.lastError ?? 'expired before the first attempt')
          opts.logger.error(
            {
              receiver: r.name,
              idempotencyKey: row.idempotencyKey,
              attempts: row.attempts,
              error: row.lastError,
            },
            'webhook notification given up',
          )
          result.failed++
          continue
        }
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'user-agent': 'tailguard',
          [IDEMPOTENCY_HEADER]: row.idempotencyKey,
        }
        if (r.secret)
          headers[SIGNATURE_HEADER] = signatureHeader(r.secret, row.body, Math.floor(nowMs / 1000))
        let error: string | null = null
        try {
          const res = await doFetch(r.url, {
            method: 'POST',
            headers,
            body: row.body,
            signal: AbortSignal.timeout(r.timeoutMs ?? 10_000),
          })
          await res.arrayBuffer().catch(() => undefined)
          if (res.status < 200 || res.status >= 300) error = `HTTP ${res.status}`
        } catch (err) {
          const cause = (err as { cause?: { code?: string } }).cause
          error = cause?.code ?? (err as Error).message
        }
        const attempts = row.attempts + 1
        if (error === null) {
          await persistence.markDelivered(row.seq, nowMs, attempts)
          result.delivered++
          continue
        }
        const delay = backoffMs(attempts, r.minBackoffMs ?? 1000, r.maxBackoffMs ?? 300_000, opts.random)
        await persistence.markRetry(row.seq, attempts, nowMs + delay, error)
        opts.logger.warn(
          { receiver: r.name, idempotencyKey: row.idempotencyKey, attempts, error, retryInMs: delay },
          'webhook delivery failed',
        )
        result.retried++
        return
      }
    }),
  )
  return result
}
