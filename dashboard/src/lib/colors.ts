/**
 * Stable colours for phases and quantiles, so a phase keeps its colour across charts and pages.
 *
 * @example
 * ```ts
 * phaseColor('queue') // '#e8a33d'
 * ```
 */

const PHASE_COLORS: Readonly<Record<string, string>> = {
  routing: '#a3a86b',
  network: '#8c96a8',
  serialization: '#b07cc6',
  queue: '#e8a33d',
  retrieval: '#5b8c5a',
  preprocess: '#5fa8d3',
  h2d: '#7ac77a',
  kernel: '#3a6ea5',
  d2h: '#4cb5a1',
  postprocess: '#c98bb9',
  prefill: '#d96c4f',
  decode: '#6c5fc7',
  total: '#2d3748',
  ttft: '#c44d58',
  tpot: '#8a6d3b',
  unattributed: '#d5d9e0',
}

const FALLBACK = ['#3a6ea5', '#d96c4f', '#4cb5a1', '#e8a33d', '#6c5fc7', '#8c96a8']

/**
 * The colour of a phase (or token metric); unknown names get a colour derived from the name.
 *
 * @example phaseColor('kernel') // '#3a6ea5'
 */
export function phaseColor(phase: string): string {
  const known = PHASE_COLORS[phase]
  if (known) return known
  let h = 0
  for (let i = 0; i < phase.length; i++) h = (h * 31 + phase.charCodeAt(i)) >>> 0
  return FALLBACK[h % FALLBACK.length] as string
}

const QUANTILE_COLORS: Readonly<Record<string, string>> = {
  '0.5': '#3a6ea5',
  '0.9': '#4cb5a1',
  '0.95': '#e8a33d',
  '0.99': '#d96c4f',
  '0.999': '#8e2c48',
}

/**
 * The line colour of a quantile: cool for the median, hot for the tail.
 *
 * @example quantileColor('0.99') // '#d96c4f'
 */
export function quantileColor(q: string): string {
  return QUANTILE_COLORS[q] ?? phaseColor(q)
}
