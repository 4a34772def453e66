/**
 * The alert state machine of one (SLO, tier), as a pure step function, and silence matching.
 */
import type { Severity } from './math.js'

/** `inactive` (never fired or cleared), `pending` (condition holds, `for` not yet elapsed), `firing`,
 * `silenced` (would be firing, but a silence matches), `resolved` (fired, condition cleared). */
export type AlertState = 'inactive' | 'pending' | 'firing' | 'silenced' | 'resolved'

/** Persistent state of one (SLO, tier) alert. */
export interface AlertRecord {
  readonly slo: string
  readonly tier: string
  readonly state: AlertState
  readonly activeSinceMs: number | null
  readonly firedAtMs: number | null
  readonly resolvedAtMs: number | null
  /** True once a firing notification went out for the current episode. */
  readonly notifiedFiring: boolean
  readonly silenceId: string | null
  readonly updatedMs: number
}

/** A notification the step asks for. */
export type AlertNotice = 'firing' | 'resolved' | null

/**
 * Advances one alert: `condition` is whether both windows burn above the tier's factor (and the minimum
 * event count is met); `silenceId` names an active silence that matches, if any.
 *
 * @example
 * ```ts
 * const { next, notify } = stepAlert(undefined, 'chat', 'page-1h', true, null, 0, 60_000)
 * // next.state === 'firing', notify === 'firing'
 * ```
 */
export function stepAlert(
  prev: AlertRecord | undefined,
  slo: string,
  tier: string,
  condition: boolean,
  silenceId: string | null,
  forMs: number,
  nowMs: number,
): { next: AlertRecord; notify: AlertNotice } {
  const base: AlertRecord = prev ?? {
    slo,
    tier,
    state: 'inactive',
    activeSinceMs: null,
    firedAtMs: null,
    resolvedAtMs: null,
    notifiedFiring: false,
    silenceId: null,
    updatedMs: nowMs,
  }
  const active = base.state === 'firing' || base.state === 'silenced'
  if (!condition) {
    if (active)
      return {
        next: {
          ...base,
          state: 'resolved',
          resolvedAtMs: nowMs,
          activeSinceMs: null,
          silenceId: null,
          updatedMs: nowMs,
        },
        notify: base.notifiedFiring ? 'resolved' : null,
      }
    if (base.state === 'pending')
      return { next: { ...base, state: 'inactive', activeSinceMs: null, updatedMs: nowMs }, notify: null }
    return { next: base, notify: null }
  }
  const since = base.state === 'pending' || active ? (base.activeSinceMs ?? nowMs) : nowMs
  if (!active && nowMs - since < forMs)
    return { next: { ...base, state: 'pending', activeSinceMs: since, updatedMs: nowMs }, notify: null }
  const firedAtMs = active ? (base.firedAtMs ?? nowMs) : nowMs
  const notifiedFiring = active ? base.notifiedFiring : false
  if (silenceId !== null) {
    if (base.state === 'silenced' && base.silenceId === silenceId) return { next: base, notify: null }
    return {
      next: {
        ...base,
        state: 'silenced',
        activeSinceMs: since,
        firedAtMs,
        resolvedAtMs: null,
        notifiedFiring,
        silenceId,
        updatedMs: nowMs,
      },
      notify: null,
    }
  }
  if (base.state === 'firing') return { next: base, notify: null }
  return {
    next: {
      ...base,
      state: 'firing',
      activeSinceMs: since,
      firedAtMs,
      resolvedAtMs: null,
      notifiedFiring: true,
      silenceId: null,
      updatedMs: nowMs,
    },
    notify: notifiedFiring ? null : 'firing',
  }
}

/** Label matchers of a silence: every one given must equal the alert's value. */
export interface SilenceMatchers {
  readonly slo?: string
  readonly tier?: string
  readonly severity?: Severity
}

export interface Silence {
  readonly id: string
  readonly matchers: SilenceMatchers
  readonly startsAtMs: number
  readonly endsAtMs: number
  readonly createdBy: string
  readonly comment: string
  readonly createdMs: number
}

/**
 * Whether a silence is active at `nowMs`: `startsAtMs ≤ now < endsAtMs`.
 *
 * @example silenceActive(silence, Date.now()) // true until silence.endsAtMs
 */
export const silenceActive = (s: Silence, nowMs: number): boolean =>
  s.startsAtMs <= nowMs && nowMs < s.endsAtMs

/**
 * The id of the first active silence matching an alert, or null.
 *
 * @example matchSilence(silences, { slo: 'chat', tier: 'page-1h', severity: 'page' }, Date.now())
 */
export function matchSilence(
  silences: readonly Silence[],
  alert: { readonly slo: string; readonly tier: string; readonly severity: Severity },
  nowMs: number,
): string | null {
  for (const s of silences) {
    if (!silenceActive(s, nowMs)) continue
    const m = s.matchers
    if (m.slo !== undefined && m.slo !== alert.slo) continue
    if (m.tier !== undefined && m.tier !== alert.tier) continue
    if (m.severity !== undefined && m.severity !== alert.severity) continue
    return s.id
  }
  return null
}
