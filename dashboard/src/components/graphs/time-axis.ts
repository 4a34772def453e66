import { formatAxisTime } from '../../lib/format.js'

/** Axis and grid colours shared by every chart. */
export const AXIS_STROKE = '#7a8394'

/**
 * Props of the time `XAxis` every time-series chart uses: epoch-ms `tMs` on a time scale over `domain`,
 * labelled for the span it covers. Spread onto `<XAxis>` (recharts reads its direct children, so a wrapper
 * component would not do).
 *
 * @example <XAxis {...timeAxisProps([fromMs, toMs])} />
 */
export function timeAxisProps(domain: [number, number] | ['dataMin', 'dataMax'], spanMs?: number) {
  const span =
    spanMs ?? (typeof domain[0] === 'number' && typeof domain[1] === 'number' ? domain[1] - domain[0] : 0)
  return {
    dataKey: 'tMs',
    type: 'number' as const,
    scale: 'time' as const,
    domain,
    tickFormatter: (t: number) => formatAxisTime(t, span),
    stroke: AXIS_STROKE,
    fontSize: 12,
  }
}

/** A tooltip label for an epoch-ms point: `YYYY-MM-DD HH:MM:SS` (UTC), or to the minute. */
export const tooltipTime =
  (precision: 'second' | 'minute' = 'second') =>
  (t: unknown): string =>
    new Date(Number(t))
      .toISOString()
      .replace('T', ' ')
      .slice(0, precision === 'second' ? 19 : 16)
