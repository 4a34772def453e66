import type { ReactNode } from 'react'

/** Props of {@link NumberTile}. */
export interface NumberTileProps {
  readonly label: string
  readonly value: ReactNode
  readonly hint?: ReactNode
  /** `bad` colours the value red (e.g. a non-zero error rate). */
  readonly tone?: 'normal' | 'bad' | 'warn'
}

/**
 * One big number with a label and an optional hint line.
 *
 * @example <NumberTile label="p99" value={formatMs(p99)} />
 */
export function NumberTile({ label, value, hint, tone = 'normal' }: NumberTileProps) {
  return (
    <div className={`tile tile-${tone}`}>
      <div className="tile-label">{label}</div>
      <div className="tile-value">{value}</div>
      {hint ? <div className="tile-hint">{hint}</div> : null}
    </div>
  )
}
