import { randomFillSync } from 'node:crypto'

// Random ids come from one pooled buffer refilled 4 KiB at a time: one syscall per ~200 requests.
const POOL = Buffer.alloc(4096)
let offset = POOL.length

function randomHex(bytes: number): string {
  if (offset + bytes > POOL.length) {
    randomFillSync(POOL)
    offset = 0
  }
  const s = POOL.toString('hex', offset, offset + bytes)
  offset += bytes
  return s
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

/**
 * The `traceparent` to send upstream (W3C Trace Context level 1): the same trace id and flags as the
 * client's valid header with a new parent id (the proxy's own span), or a new sampled trace when the header
 * is absent or invalid. Returns the trace id too, for logs.
 *
 * @example
 * ```ts
 * nextTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01') // { traceparent: '00-4bf9…-<new span>-01', … }
 * ```
 */
export function nextTraceparent(incoming: string | undefined): { traceparent: string; traceId: string } {
  const traceparent = traceparentFor(incoming)
  return { traceparent, traceId: traceparent.slice(3, 35) }
}

/**
 * {@link nextTraceparent}'s header alone, as the proxy needs it on every request: no result object, and a new
 * trace's ids come from one read of the random pool.
 *
 * @example traceparentFor(undefined) // '00-<32 hex>-<16 hex>-01'
 */
export function traceparentFor(incoming: string | undefined): string {
  if (incoming !== undefined && incoming.length <= 512) {
    const m = TRACEPARENT.exec(incoming.trim().toLowerCase())
    // Version ff is forbidden; version 00 has exactly four fields; later versions may append more.
    if (
      m &&
      m[1] !== 'ff' &&
      !(m[1] === '00' && m[5] !== undefined) &&
      m[2] !== ZERO_TRACE &&
      m[3] !== ZERO_SPAN
    )
      return `00-${m[2]}-${randomHex(8)}-${m[4]}`
  }
  const ids = randomHex(24)
  return `00-${ids.slice(0, 32)}-${ids.slice(32)}-01`
}

const REQUEST_ID = /^[\w.:/+=-]{1,128}$/
const PREFIX = randomHex(6)
let counter = 0

/**
 * The request id: the client's `x-request-id` when it is a short token, else a new one unique to this
 * process (`<12 hex>-<counter>`).
 *
 * @example requestId(undefined) // '3f9a0c12be44-1a'
 */
export function requestId(incoming: string | undefined): string {
  if (incoming !== undefined && REQUEST_ID.test(incoming)) return incoming
  return `${PREFIX}-${(++counter).toString(36)}`
}
