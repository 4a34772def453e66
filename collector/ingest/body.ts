import sjson from 'secure-json-parse'
import { IntervalReportSchema } from '../report/index.js'
import type { IntervalReport } from '../report/index.js'
import { strictValidator } from '../report/validate.js'
import { BadRequest } from '../errors.js'
import { prepareReport } from '../store/prepare.js'
import type { PreparedReport } from '../store/prepare.js'

/** How far ahead of the collector's clock a report's interval may start (an agent's clock is off past that). */
const MAX_FUTURE_MS = 10 * 60_000

/**
 * What is wrong with a report body: not JSON at all (the answers fastify gives for its own JSON bodies), or a
 * bad report, with the message naming the field.
 */
export type BodyProblem =
  | { readonly kind: 'empty-json' }
  | { readonly kind: 'invalid-json' }
  | { readonly kind: 'bad-request'; readonly message: string }

/** A report body checked and turned into rows, or what is wrong with it. Plain data (crosses threads). */
export type PreparedBody =
  | { readonly ok: true; readonly seq: number; readonly agentId: string; readonly prepared: PreparedReport }
  | { readonly ok: false; readonly problem: BodyProblem }

const check = strictValidator(IntervalReportSchema)

/**
 * Parses a `POST /api/v1/reports` body (JSON as fastify parses it: prototype poisoning refused), checks it
 * strictly (no coercion, finite numbers, safe integers, well-formed Unicode), checks its interval against the
 * collector's clock, and turns it into rows ({@link prepareReport}). The same function runs on the collector's
 * thread and on an ingest worker, so both give the same answer to the same body.
 *
 * @example const body = prepareBody(Buffer.from(JSON.stringify(report)), Date.now(), 10_000) // { ok: true, seq: 1, … }
 */
export function prepareBody(body: Uint8Array, nowMs: number, finestMs: number): PreparedBody {
  if (body.length === 0) return { ok: false, problem: { kind: 'empty-json' } }
  let value: unknown
  try {
    value = sjson.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'), null, {
      protoAction: 'error',
      constructorAction: 'error',
    })
  } catch {
    return { ok: false, problem: { kind: 'invalid-json' } }
  }
  const problem = check(value)
  if (problem !== null)
    return { ok: false, problem: { kind: 'bad-request', message: `body${problem.path}: ${problem.message}` } }
  const r = value as IntervalReport
  if (r.intervalEndMs < r.intervalStartMs)
    return bad(`intervalEndMs (${r.intervalEndMs}) is before intervalStartMs (${r.intervalStartMs})`)
  if (r.intervalStartMs > nowMs + MAX_FUTURE_MS)
    return bad(
      `intervalStartMs ${r.intervalStartMs} is more than 10 minutes ahead of the collector's clock; check the agent's clock`,
    )
  try {
    return { ok: true, seq: r.seq, agentId: r.agent.id, prepared: prepareReport(r, nowMs, finestMs) }
  } catch (err) {
    if (err instanceof BadRequest) return bad(err.message)
    throw err
  }
}

function bad(message: string): PreparedBody {
  return { ok: false, problem: { kind: 'bad-request', message } }
}
