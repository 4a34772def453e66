import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { TSchema } from '@sinclair/typebox'

/**
 * Strict validation for bodies that carry data the collector keeps (interval reports): TypeBox's compiled
 * checker, which never coerces (a string is never a number, `null` is never `""`), accepts only finite
 * numbers and checks integers with `Number.isInteger`; then every string and object key is checked to be
 * well-formed Unicode (no lone UTF-16 surrogates, which JSON can carry as `\ud800` escapes but no database
 * text column holds).
 */

/** The first problem found in a value: a JSON-pointer-like path and what is wrong there. */
export interface ValidationProblem {
  readonly path: string
  readonly message: string
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * True when `s` holds no lone UTF-16 surrogate (`String.prototype.isWellFormed`, where the runtime has it).
 *
 * @example isWellFormedUnicode('pod-\ud800') // false
 */
export function isWellFormedUnicode(s: string): boolean {
  const native = (s as { isWellFormed?: () => boolean }).isWellFormed
  return native ? native.call(s) : !LONE_SURROGATE.test(s)
}

/**
 * Replaces every lone surrogate in `s` with U+FFFD (what `String.prototype.toWellFormed` does).
 *
 * @example toWellFormedUnicode('pod-\ud800') // 'pod-\ufffd'
 */
export function toWellFormedUnicode(s: string): string {
  if (isWellFormedUnicode(s)) return s
  const native = (s as { toWellFormed?: () => string }).toWellFormed
  return native
    ? native.call(s)
    : s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')
}

const escapeKey = (k: string): string => k.replaceAll('~', '~0').replaceAll('/', '~1')

/**
 * The path of the first string or key in `value` that is not well-formed Unicode, or `null` when there is
 * none. Walks iteratively (no recursion limit to hit on deep input).
 *
 * @example firstIllFormedString({ labels: { replica: 'a\udc00' } }) // '/labels/replica'
 */
export function firstIllFormedString(value: unknown): string | null {
  const stack: Array<[unknown, string]> = [[value, '']]
  while (stack.length > 0) {
    const [v, path] = stack.pop()!
    if (typeof v === 'string') {
      if (!isWellFormedUnicode(v)) return path
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}/${i}`])
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        const p = `${path}/${escapeKey(k)}`
        if (!isWellFormedUnicode(k)) return p
        stack.push([x, p])
      }
    }
  }
  return null
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing'
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 32 ? v.slice(0, 32) + '…' : v)}`
  if (typeof v === 'object') return 'an object'
  return `${typeof v} ${String(v)}`
}

/**
 * A strict validator of a TypeBox schema: returns `null` for a valid value, else the first problem with its
 * path (`/series/0/requests/ok: Expected integer (got the string "20")`).
 *
 * @example
 * ```ts
 * const check = strictValidator(IntervalReportSchema)
 * const problem = check(JSON.parse(body)) // null, or { path: '/seq', message: 'Expected integer …' }
 * ```
 */
export function strictValidator(schema: TSchema): (value: unknown) => ValidationProblem | null {
  const compiled = TypeCompiler.Compile(schema)
  return (value) => {
    if (!compiled.Check(value)) {
      const first = compiled.Errors(value).First()
      if (!first) return { path: '', message: 'does not match the schema' }
      return { path: first.path, message: `${first.message} (got ${describe(first.value)})` }
    }
    const bad = firstIllFormedString(value)
    if (bad !== null)
      return { path: bad, message: 'must be well-formed Unicode (holds a lone UTF-16 surrogate)' }
    return null
  }
}

/**
 * A fastify `validatorCompiler` for one route's body: {@link strictValidator} with errors that name the
 * field (`body/series/0/labels/replica: …`). Coercion is off for that route whatever the app's AJV does.
 *
 * @example
 * ```ts
 * app.post('/reports', { schema: { body: IntervalReportSchema }, validatorCompiler: strictBodyCompiler }, handler)
 * ```
 */
export function strictBodyCompiler({ schema }: { schema: unknown }): (data: unknown) => {
  value?: unknown
  error?: Error
} {
  const check = strictValidator(schema as TSchema)
  return (data) => {
    const problem = check(data)
    if (problem === null) return { value: data }
    return { error: new Error(`body${problem.path}: ${problem.message}`) }
  }
}
