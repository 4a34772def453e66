import { QUANTILE_CHOICES, TIME_RANGES } from '../lib/time-range.js'
import { quantileLabel } from '../lib/format.js'
import { SPLIT_LABELS } from '../lib/route.js'
import type { SplitLabel } from '../lib/route.js'

/**
 * Buttons for the preset ranges (5 min … 7 days).
 *
 * @example <TimeRangePicker value="1h" onChange={setRange} />
 */
export function TimeRangePicker(props: { value: string; onChange: (key: string) => void }) {
  return (
    <div className="segmented" role="group" aria-label="time range">
      {TIME_RANGES.map((r) => (
        <button
          key={r.key}
          type="button"
          className={r.key === props.value ? 'active' : undefined}
          aria-pressed={r.key === props.value}
          title={`last ${r.label}`}
          onClick={() => props.onChange(r.key)}
        >
          {r.key}
        </button>
      ))}
    </div>
  )
}

/**
 * Toggles for the quantiles to draw; at least one stays selected.
 *
 * @example <QuantilePicker value={['0.5', '0.99']} onChange={setQuantiles} />
 */
export function QuantilePicker(props: { value: readonly string[]; onChange: (qs: string[]) => void }) {
  const toggle = (q: string) => {
    const on = props.value.includes(q)
    if (on && props.value.length === 1) return
    props.onChange(QUANTILE_CHOICES.filter((c) => (c === q ? !on : props.value.includes(c))))
  }
  return (
    <div className="segmented" role="group" aria-label="quantiles">
      {QUANTILE_CHOICES.map((q) => (
        <button
          key={q}
          type="button"
          className={props.value.includes(q) ? 'active' : undefined}
          aria-pressed={props.value.includes(q)}
          onClick={() => toggle(q)}
        >
          {quantileLabel(q)}
        </button>
      ))}
    </div>
  )
}

/**
 * A select of the phases to chart (those the service reports, plus `total`).
 *
 * @example <PhasePicker value="total" phases={['total', 'queue']} onChange={setPhase} />
 */
export function PhasePicker(props: {
  value: string
  phases: readonly string[]
  onChange: (phase: string) => void
}) {
  const options = props.phases.includes(props.value) ? props.phases : [props.value, ...props.phases]
  return (
    <label className="select">
      <span>phase</span>
      <select aria-label="phase" value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        {options.map((p) => (
          <option key={p} value={p}>
            {p}
          </option>
        ))}
      </select>
    </label>
  )
}

/**
 * How the service page's charts are split: one line (and one latency heatmap) for the whole service, or one per
 * replica, node or version. The tiles stay for the whole service.
 *
 * @example <SplitPicker value={route.split} onChange={(split) => navigate({ ...route, split })} />
 */
export function SplitPicker(props: {
  value: SplitLabel | undefined
  onChange: (split: SplitLabel | undefined) => void
}) {
  const choices: ReadonlyArray<[SplitLabel | undefined, string]> = [
    [undefined, 'all'],
    ...SPLIT_LABELS.map((l): [SplitLabel, string] => [l, `per ${l}`]),
  ]
  return (
    <div className="select split-picker">
      <span id="split-picker-label">split</span>
      <div className="segmented" role="group" aria-labelledby="split-picker-label">
        {choices.map(([value, label]) => (
          <button
            key={label}
            type="button"
            className={value === props.value ? 'active' : undefined}
            aria-pressed={value === props.value}
            title={
              value
                ? `every chart: one line (and one latency heatmap) per ${value}`
                : 'every chart for the whole service'
            }
            onClick={() => props.onChange(value)}
          >
            {label}
          </button>
        ))}
      </div>
    </div>
  )
}
