/**
 * Tells "the database is unavailable" (retry later: 503) from "this data cannot be stored" (final: 4xx), so
 * that a report the database refuses never becomes a poison pill that an agent retries for ever.
 *
 * Unavailable: lost or refused connections, PostgreSQL classes 08 (connection), 40 (serialization or
 * deadlock), 53 (insufficient resources), 55 (lock not available), 57 (operator intervention) and 58
 * (system error), and SQLite's busy, locked, I/O, full, read-only and cannot-open errors. Everything else
 * (PostgreSQL data and integrity errors of classes 22 and 23, SQLite constraint or mismatch errors, bugs)
 * is about the data or the code, and retrying the same report will not help.
 */

const NODE_NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])
const PG_UNAVAILABLE_CLASSES = new Set(['08', '40', '53', '55', '57', '58'])
const SQLITE_UNAVAILABLE =
  /^SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CANTOPEN|NOMEM|PROTOCOL|INTERRUPT|NOLFS|AUTH)/

/**
 * True when `err` says the database could not be reached or could not take a write just now.
 *
 * @example isStoreUnavailable(Object.assign(new Error('…'), { code: '57P01' })) // true (admin shutdown)
 */
export function isStoreUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null
  const code = typeof e?.code === 'string' ? e.code : ''
  if (NODE_NETWORK.has(code)) return true
  if (/^[0-9A-Z]{5}$/.test(code) && PG_UNAVAILABLE_CLASSES.has(code.slice(0, 2))) return true
  if (SQLITE_UNAVAILABLE.test(code)) return true
  const message = typeof e?.message === 'string' ? e.message : ''
  return /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect|database is locked|driver has already been destroyed/i.test(
    message,
  )
}
