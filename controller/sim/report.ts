import type { SimResult } from './simulator.js'

/** One workload and the results of every policy run on it. */
export interface Scenario {
  readonly name: string
  /** One line describing the workload and fleet (shown under the heading). */
  readonly description: string
  readonly results: readonly SimResult[]
  /** Attribution of the data the workload came from, if any (e.g. the Azure trace's). */
  readonly attribution?: string
}

const pct = (x: number) => `${(x * 100).toFixed(2)}%`
const ms = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(1)} ms`)

/** Columns of the comparison table: header and how to render a result. */
function columns(results: readonly SimResult[]): Array<[string, (r: SimResult) => string]> {
  const llm = results.some((r) => r.latencyMs.ttft !== undefined)
  const cols: Array<[string, (r: SimResult) => string]> = [
    ['policy', (r) => r.policy],
    ['attainment', (r) => pct(r.attainment.overall)],
  ]
  if (llm) {
    cols.push(['e2e ok', (r) => pct(r.attainment.e2e)])
    cols.push(['ttft ok', (r) => pct(r.attainment.ttft ?? 0)])
    cols.push(['tpot ok', (r) => pct(r.attainment.tpot ?? 0)])
  }
  cols.push(
    ['violation min', (r) => String(r.sloViolationMinutes)],
    ['p50', (r) => ms(r.latencyMs.e2e.p50)],
    ['p99', (r) => ms(r.latencyMs.e2e.p99)],
    ['p99.9', (r) => ms(r.latencyMs.e2e.p999)],
  )
  if (llm) {
    cols.push(['ttft p99', (r) => ms(r.latencyMs.ttft?.p99 ?? 0)])
    cols.push(['tpot p99', (r) => ms(r.latencyMs.tpot?.p99 ?? 0)])
  }
  cols.push(
    ['goodput/s', (r) => r.goodputRps.toFixed(1)],
    ['GPU-hours', (r) => r.gpuHours.toFixed(2)],
    ['shed', (r) => pct(r.arrived > 0 ? r.shed / r.arrived : 0)],
    ['shed by class', (r) => r.shedRateByClass.map(pct).join(' / ')],
    ['scale actions', (r) => String(r.scalingActions)],
    ['replicas min/mean/max', (r) => `${r.replicas.min}/${r.replicas.mean.toFixed(1)}/${r.replicas.max}`],
  )
  return cols
}

/**
 * Renders results as an aligned text table (valid Markdown), one row per policy.
 *
 * @example io.out(formatResultsTable(results))
 */
export function formatResultsTable(results: readonly SimResult[]): string {
  const cols = columns(results)
  const rows = [cols.map((c) => c[0]), ...results.map((r) => cols.map((c) => c[1](r)))]
  const widths = cols.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  const line = (row: readonly string[]) => '| ' + row.map((c, i) => c.padEnd(widths[i]!)).join(' | ') + ' |'
  return [
    line(rows[0]!),
    '| ' + widths.map((w) => '-'.repeat(w)).join(' | ') + ' |',
    ...rows.slice(1).map(line),
  ].join('\n')
}

const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#9c755f']

const esc = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** A horizontal bar chart: one bar per policy. */
function barChart(
  title: string,
  labels: readonly string[],
  values: readonly number[],
  fmt: (v: number) => string,
): string {
  const w = 360
  const barH = 18
  const left = 70
  const h = 28 + labels.length * (barH + 6)
  const max = Math.max(...values.filter(Number.isFinite), 1e-9)
  const bars = labels
    .map((label, i) => {
      const v = Number.isFinite(values[i]!) ? values[i]! : 0
      const y = 24 + i * (barH + 6)
      const bw = Math.max(1, ((w - left - 70) * v) / max)
      return (
        `<text x="${left - 6}" y="${y + 13}" text-anchor="end">${esc(label)}</text>` +
        `<rect x="${left}" y="${y}" width="${bw.toFixed(1)}" height="${barH}" fill="${COLORS[i % COLORS.length]}"/>` +
        `<text x="${(left + bw + 4).toFixed(1)}" y="${y + 13}">${esc(fmt(values[i]!))}</text>`
      )
    })
    .join('')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="11"><text x="4" y="14" font-weight="bold">${esc(title)}</text>${bars}</svg>`
}

/** A decision drawn on a chart's time axis: a triangle with the reason as its tooltip. */
interface Marker {
  readonly minute: number
  readonly series: number
  readonly up: boolean
  readonly reason: string
}

/** A line chart over minutes: one line per policy, and optional decision markers along the bottom. */
function lineChart(
  title: string,
  series: ReadonlyArray<{ name: string; values: ReadonlyArray<number | null> }>,
  unit: string,
  markers: readonly Marker[] = [],
): string {
  const w = 560
  const h = 220
  const l = 50
  const r = 10
  const t = 24
  const b = 30
  const n = Math.max(1, ...series.map((s) => s.values.length))
  const all = series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v)))
  const max = Math.max(1e-9, ...all)
  const x = (i: number) => l + ((w - l - r) * i) / Math.max(1, n - 1)
  const y = (v: number) => t + (h - t - b) * (1 - v / max)
  const lines = series
    .map((s, k) => {
      let d = ''
      let pen = false
      s.values.forEach((v, i) => {
        if (v === null || !Number.isFinite(v)) {
          pen = false
          return
        }
        d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`
        pen = true
      })
      return `<path d="${d}" fill="none" stroke="${COLORS[k % COLORS.length]}" stroke-width="1.5"/>`
    })
    .join('')
  const legend = series
    .map(
      (s, k) =>
        `<rect x="${l + k * 80}" y="${h - 12}" width="10" height="10" fill="${COLORS[k % COLORS.length]}"/><text x="${l + k * 80 + 14}" y="${h - 3}">${esc(s.name)}</text>`,
    )
    .join('')
  const axis =
    `<line x1="${l}" y1="${h - b}" x2="${w - r}" y2="${h - b}" stroke="#999"/>` +
    `<line x1="${l}" y1="${t}" x2="${l}" y2="${h - b}" stroke="#999"/>` +
    `<text x="${l - 4}" y="${t + 4}" text-anchor="end">${esc(fmtAxis(max))}</text>` +
    `<text x="${l - 4}" y="${h - b}" text-anchor="end">0</text>` +
    `<text x="${w - r}" y="${h - b + 12}" text-anchor="end">minute ${n - 1}</text>`
  const marks = markers
    .map((m) => {
      const mx = l + ((w - l - r) * m.minute) / Math.max(1, n - 1)
      const my = h - b - 2
      const pts = m.up
        ? `${(mx - 4).toFixed(1)},${my} ${(mx + 4).toFixed(1)},${my} ${mx.toFixed(1)},${my - 7}`
        : `${(mx - 4).toFixed(1)},${my - 7} ${(mx + 4).toFixed(1)},${my - 7} ${mx.toFixed(1)},${my}`
      return `<polygon points="${pts}" fill="${COLORS[m.series % COLORS.length]}" opacity="0.8"><title>${esc(m.reason)}</title></polygon>`
    })
    .join('')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="11"><text x="4" y="14" font-weight="bold">${esc(title)} (${esc(unit)})</text>${axis}${lines}${marks}${legend}</svg>`
}

/** Scale decisions of the tailguard runs (the policies that explain themselves) as chart markers. */
function decisionMarkers(results: readonly SimResult[]): Marker[] {
  return results.flatMap((r, k) =>
    r.policy.startsWith('tailguard')
      ? r.decisions
          .filter((d) => / (up|down|hold):/.test(d.reason))
          .map((d) => ({ minute: d.atMs / 60_000, series: k, up: / up:/.test(d.reason), reason: d.reason }))
      : [],
  )
}

/** The decisions of each tailguard run, with their reasons, as a collapsible list. */
function decisionsHtml(results: readonly SimResult[]): string {
  return results
    .filter((r) => r.policy.startsWith('tailguard') && r.decisions.length > 0)
    .map(
      (r) =>
        `<details><summary>${esc(r.policy)}: ${r.decisions.length} decisions</summary><table><tr><th>time</th><th>reason</th></tr>` +
        r.decisions
          .map(
            (d) =>
              `<tr><td>${(d.atMs / 1000).toFixed(0)} s</td><td style="text-align:left">${esc(d.reason)}</td></tr>`,
          )
          .join('') +
        `</table></details>`,
    )
    .join('')
}

function fmtAxis(v: number): string {
  return v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toPrecision(2)
}

/**
 * A self-contained HTML report (inline SVG, no scripts or external resources) comparing policies side by side
 * on each scenario: a table, bar charts of attainment, GPU-hours, goodput, shed rate and p99, and per-minute
 * replicas and p99 over time.
 *
 * @example writeFileSync('sim.html', renderHtmlReport('tailguard sim', [{ name: 'step', description: '…', results }]))
 */
export function renderHtmlReport(title: string, scenarios: readonly Scenario[]): string {
  const sections = scenarios.map((sc) => {
    const labels = sc.results.map((r) => r.policy)
    const table = tableHtml(sc.results)
    const bars = [
      barChart(
        'SLO attainment',
        labels,
        sc.results.map((r) => r.attainment.overall * 100),
        (v) => `${v.toFixed(2)}%`,
      ),
      barChart(
        'GPU-hours',
        labels,
        sc.results.map((r) => r.gpuHours),
        (v) => v.toFixed(2),
      ),
      barChart(
        'Goodput (req/s within SLO)',
        labels,
        sc.results.map((r) => r.goodputRps),
        (v) => v.toFixed(1),
      ),
      barChart(
        'Shed rate',
        labels,
        sc.results.map((r) => (r.arrived > 0 ? (r.shed / r.arrived) * 100 : 0)),
        (v) => `${v.toFixed(2)}%`,
      ),
      barChart(
        'p99 end to end',
        labels,
        sc.results.map((r) => r.latencyMs.e2e.p99),
        ms,
      ),
      barChart(
        'SLO-violation minutes',
        labels,
        sc.results.map((r) => r.sloViolationMinutes),
        (v) => String(v),
      ),
    ].join('\n')
    const lines = [
      lineChart(
        'Replicas per minute',
        sc.results.map((r) => ({ name: r.policy, values: r.timeline.replicas })),
        'mean alive; ▲▼ tailguard scale decisions, reason on hover',
        decisionMarkers(sc.results),
      ),
      lineChart(
        'p99 end to end per minute',
        sc.results.map((r) => ({ name: r.policy, values: r.timeline.p99Ms })),
        'ms',
      ),
      lineChart(
        'Arrivals per minute',
        sc.results.slice(0, 1).map((r) => ({ name: 'arrivals', values: r.timeline.arrivals })),
        'requests',
      ),
    ].join('\n')
    return (
      `<section><h2>${esc(sc.name)}</h2><p>${esc(sc.description)}</p>${table}` +
      `<div class="grid">${bars}</div><div class="grid">${lines}</div>${decisionsHtml(sc.results)}` +
      (sc.attribution ? `<p class="attr">Data: ${esc(sc.attribution)}</p>` : '') +
      `</section>`
    )
  })
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:12px;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.grid{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0}.attr{font-size:11px;color:#555}section{margin-bottom:32px}</style>
</head><body><h1>${esc(title)}</h1>
${sections.join('\n')}
</body></html>
`
}

function tableHtml(results: readonly SimResult[]): string {
  const cols = columns(results)
  const head = '<tr>' + cols.map((c) => `<th>${esc(c[0])}</th>`).join('') + '</tr>'
  const rows = results
    .map((r) => '<tr>' + cols.map((c) => `<td>${esc(c[1](r))}</td>`).join('') + '</tr>')
    .join('')
  return `<table>${head}${rows}</table>`
}
