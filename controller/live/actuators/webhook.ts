import { SIGNATURE_HEADER, signatureHeader } from '../../../collector/index.js'
import { describeFailure, httpJson } from '../http.js'
import type { Actuator, Knob } from './types.js'

/** Options of {@link createWebhookActuator}. */
export interface WebhookActuatorOptions {
  readonly url: string
  /** HMAC-SHA256 secret; the body is signed like the SLO webhooks (`x-tailguard-signature: t=…,v1=…`). */
  readonly secret?: string
  readonly knobs: readonly Knob[]
  readonly timeoutMs?: number
  readonly clock?: () => number
}

/**
 * Anything else: POSTs each decision's changes as JSON
 * (`{ target, decisionId, fencingToken, reason, change }`), signed with HMAC-SHA256 exactly as the SLO alert
 * webhooks are (collector/slo/webhooks.ts), with `idempotency-key: <target>-<decisionId>` so a receiver can
 * drop repeats. Any 2xx is applied. It cannot read back what it drives.
 *
 * @example createWebhookActuator({ url: 'https://ops.example/scale', secret, knobs: ['replicas'] })
 */
export function createWebhookActuator(o: WebhookActuatorOptions): Actuator {
  const clock = o.clock ?? Date.now
  return {
    name: `webhook ${new URL(o.url).origin}`,
    knobs: o.knobs,
    async read() {
      return { ok: true, reading: {} }
    },
    async apply(change, ctx) {
      const body = JSON.stringify({
        target: ctx.target,
        decisionId: ctx.decisionId,
        fencingToken: ctx.fencingToken,
        reason: ctx.reason,
        change,
      })
      const headers: Record<string, string> = { 'idempotency-key': `${ctx.target}-${ctx.decisionId}` }
      if (o.secret) headers[SIGNATURE_HEADER] = signatureHeader(o.secret, body, Math.floor(clock() / 1000))
      const r = await httpJson(o.url, { method: 'POST', body, headers, timeoutMs: o.timeoutMs ?? 10_000 })
      if (!r.ok || r.status < 200 || r.status >= 300)
        return { ok: false, error: describeFailure('webhook', r) }
      return { ok: true }
    },
  }
}
