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

/** `String.prototype.isWellFormed` (Node >= 20), looked up once. */
const NATIVE_WELL_FORMED = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * True when `s` holds no lone UTF-16 surrogate (`String.prototype.isWellFormed`, where the runtime has it).
 *
 * @example isWellFormedUnicode('pod-\ud800') // false
 */
export function isWellFormedUnicode(s: string): boolean {
  return NATIVE_WELL_FORMED ? NATIVE_WELL_FORMED.call(s) : !LONE_SURROGATE.test(s)
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
 * none; the first in document order. Walks iteratively (no recursion limit to hit on deep input). The walk
 * builds no paths: a report of 10,000 series has about 200,000 strings and keys, all well-formed in practice,
 * so the path is worked out only once a bad one is found, by a second walk.
 *
 * @example firstIllFormedString({ labels: { replica: 'a\udc00' } }) // '/labels/replica'
 */
export function firstIllFormedString(value: unknown): string | null {
  return allWellFormed(value) ? null : pathOfIllFormed(value)
}

/** True when every string and key in `value` is well-formed Unicode; no allocation per node but the stack. */
function allWellFormed(value: unknown): boolean {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === 'string') {
      if (!isWellFormedUnicode(v)) return false
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push(v[i])
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v)
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!
        if (!isWellFormedUnicode(k)) return false
        stack.push((v as Record<string, unknown>)[k])
      }
    }
  }
  return true
}

/**
 * {@link firstIllFormedString}'s answer for a value known to hold a bad string or key: depth first in document
 * order (object keys in their order, each key checked just before its value; array items by index).
 */
function pathOfIllFormed(value: unknown): string | null {
  const stack: Array<[unknown, string, string | null]> = [[value, '', null]]
  while (stack.length > 0) {
    const [v, path, key] = stack.pop()!
    if (key !== null && !isWellFormedUnicode(key)) return path
    if (typeof v === 'string') {
      if (!isWellFormedUnicode(v)) return path
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}/${i}`, null])
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v)
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, x] = entries[i]!
        stack.push([x, `${path}/${escapeKey(k)}`, k])
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
