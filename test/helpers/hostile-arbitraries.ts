import fc from 'fast-check'

/** How many cases each property-based fuzz test runs (`TG_FUZZ_RUNS`, default 10,000: the floor). */
export const FUZZ_RUNS = Number(process.env.TG_FUZZ_RUNS ?? 10_000)

/** A fixed seed per run (`TG_FUZZ_SEED`), so a failure names a reproducible case. */
export const FUZZ_SEED = Number(process.env.TG_FUZZ_SEED ?? 20261123)

/** Strings a careless client or an attacker sends: lone surrogates, NUL, huge, numeric edge cases. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.constantFrom(
    '',
    '\ud800',
    'a\udc00b',
    '\u0000',
    'x'.repeat(300),
    'Infinity',
    '-Infinity',
    'NaN',
    '1e400',
    '9'.repeat(400),
    '8640000000000001',
    '-8640000000000001',
    '9007199254740993',
    '-99999999999999w',
    '0',
    '-0',
    '1.5',
    'now',
    '-1h',
    '-30d',
    '2026-11-21T12:00:00Z',
    '+275760-09-13T00:00:00.001Z',
    '__proto__',
    'constructor',
    '*alias',
    '&a [*a]',
  ),
)

/** Numbers past every bound: non-finite (they become null in JSON), huge, negative, fractional, unsafe. */
export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(
    0,
    -1,
    0.5,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    1e308,
    -1e308,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    8_640_000_000_000_001,
    1e12 + 1,
    Infinity,
    NaN,
  ),
)

/** Any JSON value, deep or wide, with hostile leaves. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    hostileNumber,
    hostileString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 4 }),
    // Deep and wide shapes, built without recursion limits in the generator.
    fc.integer({ min: 50, max: 1000 }).map((d) => {
      let v: unknown = 1
      for (let i = 0; i < d; i++) v = [v]
      return v
    }),
    fc.integer({ min: 100, max: 5000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
  ),
})).value

type Path = ReadonlyArray<string | number>

function paths(value: unknown): Path[] {
  // Iterative, and only down to a depth of 64: deep values are mutated near their top.
  const out: Path[] = []
  const stack: Array<[unknown, Path]> = [[value, []]]
  while (stack.length > 0 && out.length < 10_000) {
    const [v, p] = stack.pop()!
    out.push(p)
    if (p.length >= 64) continue
    if (Array.isArray(v)) v.forEach((x, i) => stack.push([x, [...p, i]]))
    else if (v !== null && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) stack.push([x, [...p, k]])
  }
  return out
}

/** A mutation of a JSON value: replace, delete or add at one path. */
export type Mutation =
  | { readonly kind: 'replace'; readonly at: number; readonly value: unknown }
  | { readonly kind: 'delete'; readonly at: number }
  | { readonly kind: 'add'; readonly at: number; readonly key: string; readonly value: unknown }
  | { readonly kind: 'none' }

/** 0 to 3 mutations (weighted towards one), applied by {@link mutate}. */
export const mutations: fc.Arbitrary<Mutation[]> = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: hostileJson }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('add' as const), at: fc.nat(), key: hostileString, value: hostileJson }),
    fc.constant({ kind: 'none' as const }),
  ),
  { minLength: 0, maxLength: 3 },
)

/**
 * Percent-encodes every byte of the UTF-8 form of `s` that is not unreserved (lone surrogates become U+FFFD's
 * bytes, as a client library would send them); `raw` strings are sent as they are (`%ZZ`, `%ED%A0%80`).
 *
 * @example encodeQueryPart('a b') // 'a%20b'
 */
export function encodeQueryPart(s: string): string {
  let out = ''
  for (const b of Buffer.from(s, 'utf8'))
    out += /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b))
      ? String.fromCharCode(b)
      : `%${b.toString(16).padStart(2, '0')}`
  return out
}

/** Raw query text a hand-written client may send: broken escapes and encoded invalid UTF-8. */
export const rawQueryText: fc.Arbitrary<string> = fc.constantFrom(
  '%ZZ',
  '%',
  '%ED%A0%80',
  '%00',
  '%FF%FE',
  '%C0%AF',
  '+%2B+',
)

/**
 * Applies mutations to a deep copy of `value` (paths chosen modulo the number of paths there are).
 *
 * @example mutate({ a: 1 }, [{ kind: 'replace', at: 1, value: 'x' }]) // { a: 'x' }
 */
export function mutate(value: unknown, ms: readonly Mutation[]): unknown {
  let root = structuredClone(value)
  for (const m of ms) {
    if (m.kind === 'none') continue
    const all = paths(root)
    const path = all[m.at % all.length]!
    if (path.length === 0) {
      if (m.kind === 'replace') root = m.value
      continue
    }
    let parent = root as Record<string | number, unknown>
    for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>
    const last = path[path.length - 1]!
    if (m.kind === 'replace') parent[last] = m.value
    else if (m.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1)
      else delete parent[last]
    } else if (parent[last] !== null && typeof parent[last] === 'object' && !Array.isArray(parent[last]))
      (parent[last] as Record<string, unknown>)[m.key] = m.value
  }
  return root
}
