/**
 * The what-if page's types (the answer of `POST /api/v1/whatif`) and pure transforms: chart rows, and the
 * names of policies whose lines coincide, so that the page says "aimd = static" instead of hiding one line
 * behind another.
 *
 * @example
 * ```ts
 * coincideNotes(answer) // ['aimd = static']
 * ```
 */

/** The policies the simulator compares (controller/sim/scenario.ts). */
export const WHATIF_POLICIES = ['static', 'hpa', 'keda', 'kpa', 'aimd', 'tailguard'] as const
/** The synthetic patterns, with the words the form shows. */
export const WHATIF_PATTERNS = [
  { value: 'poisson', label: 'constant (Poisson arrivals)' },
  { value: 'step', label: 'step (3× in the middle third)' },
  { value: 'diurnal', label: 'diurnal (±60%, one cycle)' },
  { value: 'mmpp', label: 'bursty (MMPP)' },
] as const

/** One policy's row of the comparison table. */
export interface WhatifResult {
  readonly policy: string
  readonly arrived: number
  readonly attainment: number
  readonly sloViolationMinutes: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly gpuHours: number
  readonly replicaChanges: number
  readonly shed: number
  readonly shedRate: number
  readonly replicas: { readonly min: number; readonly mean: number; readonly max: number }
}

/** The answer of `POST /api/v1/whatif`. */
export interface WhatifAnswer {
  readonly workload: { readonly name: string; readonly description: string }
  readonly attribution: string | null
  readonly results: readonly WhatifResult[]
  readonly coincide: ReadonlyArray<readonly string[]>
  readonly timeline: {
    readonly minute: readonly number[]
    readonly series: ReadonlyArray<{
      readonly policy: string
      readonly replicas: readonly number[]
      readonly p99Ms: ReadonlyArray<number | null>
    }>
  }
  readonly simulatedRequests: number
  readonly elapsedMs: number
}

/**
 * One line per group of policies whose series are identical, the later ones named equal to the first:
 * `['static', 'aimd']` reads "aimd = static".
 *
 * @example coincideNotes({ coincide: [['static', 'aimd', 'hpa']] }) // ['aimd = hpa = static']
 */
export function coincideNotes(answer: Pick<WhatifAnswer, 'coincide'>): string[] {
  return answer.coincide.map((g) => [...g.slice(1), g[0]!].join(' = '))
}

/**
 * The legend name of each policy: its own name, with "(= first)" when its lines coincide with an earlier one's.
 *
 * @example legendNames({ coincide: [['static', 'aimd']] }, ['static', 'aimd']) // { static: 'static', aimd: 'aimd (= static)' }
 */
export function legendNames(
  answer: Pick<WhatifAnswer, 'coincide'>,
  policies: readonly string[],
): Record<string, string> {
  const names: Record<string, string> = {}
  for (const p of policies) names[p] = p
  for (const g of answer.coincide) for (const p of g.slice(1)) names[p] = `${p} (= ${g[0]})`
  return names
}

/**
 * Chart rows over minutes: `{ minute, <policy>: value }` for one metric of the timeline.
 *
 * @example chartRows(answer, 'replicas')[0] // { minute: 0, static: 3, hpa: 1 }
 */
export function chartRows(
  answer: Pick<WhatifAnswer, 'timeline'>,
  metric: 'replicas' | 'p99Ms',
): Array<Record<string, number | null>> {
  return answer.timeline.minute.map((minute, i) => {
    const row: Record<string, number | null> = { minute }
    for (const s of answer.timeline.series) row[s.policy] = s[metric][i] ?? null
    return row
  })
}

/** Dash patterns that keep coinciding lines apart to the eye: the n-th policy of a group gets the n-th. */
const DASHES = [undefined, '6 4', '2 3', '10 3 2 3', '1 5', '8 8']

/**
 * The stroke dash of each policy's line: solid for the first of a coinciding group (and for lone policies),
 * a different dash for each later one, so a line drawn over another still shows.
 *
 * @example lineDashes({ coincide: [['static', 'aimd']] }).aimd // '6 4'
 */
export function lineDashes(answer: Pick<WhatifAnswer, 'coincide'>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {}
  for (const g of answer.coincide) g.forEach((p, i) => (out[p] = DASHES[i % DASHES.length]))
  return out
}
