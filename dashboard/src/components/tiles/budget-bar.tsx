import { budgetBar } from '../../lib/slo.js'

/** Props of {@link BudgetBarView}. */
export interface BudgetBarProps {
  /** The API's `budgetRemaining` (0..1, negative when overspent, null without data). */
  readonly remaining: number | null
  /** A wider bar with the label beside it (the detail page). */
  readonly large?: boolean
}

/**
 * The remaining error budget as a bar and a percentage. An overspent budget draws an empty red bar with
 * its negative percentage. `data-remaining` carries the API's ratio for tests.
 *
 * @example <BudgetBarView remaining={status.budgetRemaining} />
 */
export function BudgetBarView({ remaining, large = false }: BudgetBarProps) {
  const bar = budgetBar(remaining)
  return (
    <div
      className={`budget${large ? ' budget-large' : ''}`}
      data-remaining={remaining === null ? '' : String(remaining)}
      data-tone={bar.tone}
    >
      <div
        className="budget-bar"
        role="meter"
        aria-label="error budget remaining"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={bar.widthPct}
        aria-valuetext={bar.label}
      >
        <div className={`budget-fill budget-${bar.tone}`} style={{ width: `${bar.widthPct}%` }} />
      </div>
      <span className={`budget-label budget-text-${bar.tone}`}>{bar.label}</span>
    </div>
  )
}
