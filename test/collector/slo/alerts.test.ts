import { describe, expect, it } from 'vitest'
import { matchSilence, stepAlert } from '../../../collector/slo/alerts.js'
import type { AlertRecord } from '../../../collector/slo/alerts.js'

const MIN = 60_000

/** Runs a sequence of (condition, silence) steps a minute apart; returns states and notifications. */
function run(steps: Array<[boolean, string | null]>, forMs = 0): string[] {
  let rec: AlertRecord | undefined
  const out: string[] = []
  steps.forEach(([cond, silence], i) => {
    const { next, notify } = stepAlert(rec, 's', 'page-1h', cond, silence, forMs, i * MIN)
    rec = next
    out.push(notify ? `${next.state}!${notify}` : next.state)
  })
  return out
}

describe('alert state machine', () => {
  it.each([
    {
      name: 'fires and resolves',
      steps: [
        [false, null],
        [true, null],
        [true, null],
        [false, null],
      ],
      forMs: 0,
      want: ['inactive', 'firing!firing', 'firing', 'resolved!resolved'],
    },
    {
      name: 'waits for `for` while pending',
      steps: [
        [true, null],
        [true, null],
        [true, null],
        [false, null],
      ],
      forMs: 2 * MIN,
      want: ['pending', 'pending', 'firing!firing', 'resolved!resolved'],
    },
    {
      name: 'a pending alert that clears never notifies',
      steps: [
        [true, null],
        [false, null],
        [true, null],
      ],
      forMs: 2 * MIN,
      want: ['pending', 'inactive', 'pending'],
    },
    {
      name: 'silenced from the start: no notifications',
      steps: [
        [true, 'x'],
        [true, 'x'],
        [false, null],
      ],
      forMs: 0,
      want: ['silenced', 'silenced', 'resolved'],
    },
    {
      name: 'notifies when the silence ends while still firing',
      steps: [
        [true, 'x'],
        [true, null],
        [false, null],
      ],
      forMs: 0,
      want: ['silenced', 'firing!firing', 'resolved!resolved'],
    },
    {
      name: 'a firing alert silenced later does not notify again',
      steps: [
        [true, null],
        [true, 'x'],
        [true, null],
        [false, 'x'],
      ],
      forMs: 0,
      want: ['firing!firing', 'silenced', 'firing', 'resolved!resolved'],
    },
    {
      name: 'a new episode after resolving fires again',
      steps: [
        [true, null],
        [false, null],
        [true, null],
      ],
      forMs: 0,
      want: ['firing!firing', 'resolved!resolved', 'firing!firing'],
    },
  ] as Array<{ name: string; steps: Array<[boolean, string | null]>; forMs: number; want: string[] }>)(
    '$name',
    ({ steps, forMs, want }) => {
      expect(run(steps, forMs)).toEqual(want)
    },
  )

  it('matches silences on every given label and only while active', () => {
    const base = { createdBy: 'a', comment: '', createdMs: 0 }
    const silences = [
      { ...base, id: 'tier', matchers: { slo: 's', tier: 'ticket-3d' }, startsAtMs: 0, endsAtMs: 100 },
      { ...base, id: 'page', matchers: { severity: 'page' as const }, startsAtMs: 50, endsAtMs: 100 },
    ]
    expect(matchSilence(silences, { slo: 's', tier: 'ticket-3d', severity: 'ticket' }, 10)).toBe('tier')
    expect(matchSilence(silences, { slo: 's', tier: 'page-1h', severity: 'page' }, 10)).toBeNull()
    expect(matchSilence(silences, { slo: 's', tier: 'page-1h', severity: 'page' }, 60)).toBe('page')
    expect(matchSilence(silences, { slo: 's', tier: 'page-1h', severity: 'page' }, 100)).toBeNull()
  })
})
