import { useState } from 'react'
import { ApiError, apiSend } from '../api.js'
import { useAuth } from '../auth.js'
import type { Controller } from '../lib/controller.js'
import { ConfirmDialog } from './confirm-dialog.js'

/** What an operator asked for. */
type Lever = { kind: 'mode'; mode: 'observe' | 'enforce' } | { kind: 'rollback' }

/** The answer to the last action: done, or refused / failed with the collector's reason. */
type Outcome = { kind: 'done'; text: string } | { kind: 'refused'; text: string }

/**
 * The words for an action that failed. A 403 is a token without admin scope: it says so plainly, with the
 * collector's message, and never signs the user out (the token still reads).
 *
 * @example refusalText(new ApiError(403, 'TG_ERR_FORBIDDEN', 'this route needs admin scope'), 'switch the mode')
 */
export function refusalText(err: unknown, what: string): string {
  if (err instanceof ApiError) {
    if (err.statusCode === 403)
      return `Refused: your token may read but not ${what}; that needs an admin token (the collector said: ${err.message}).`
    if (err.statusCode === 401) return `Refused: the collector does not accept this token (${err.message}).`
    return `Could not ${what}: ${err.message} (HTTP ${err.statusCode || 'unreachable'}).`
  }
  return `Could not ${what}: the request failed unexpectedly.`
}

/** Props of {@link ControllerActions}. */
export interface ControllerActionsProps {
  readonly controller: Controller
  /** Called with the controller as the collector answered it after a successful action. */
  readonly onChanged: (c: Controller) => void
}

/**
 * The operator's levers of one target: switch between observe and enforce, and roll back to the setpoints from
 * before the last applied decision (which also switches to observe). Each asks for confirmation first; both
 * need an admin token, and a read token gets a clear refusal in the page (`role="alert"`).
 *
 * @example <ControllerActions controller={c} onChanged={reload} />
 */
export function ControllerActions({ controller, onChanged }: ControllerActionsProps) {
  const { token } = useAuth()
  const [asking, setAsking] = useState<Lever | null>(null)
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<Outcome | null>(null)
  const target = controller.target
  const other = controller.mode === 'enforce' ? 'observe' : 'enforce'
  const run = async (lever: Lever) => {
    if (token === null) return
    setBusy(true)
    const what = lever.kind === 'mode' ? `switch ${target} to ${lever.mode}` : `roll back ${target}`
    try {
      const path = `controllers/${encodeURIComponent(target)}/${lever.kind}`
      const c = await apiSend<Controller>(
        'POST',
        path,
        lever.kind === 'mode' ? { mode: lever.mode } : undefined,
        token,
      )
      setOutcome({
        kind: 'done',
        text:
          lever.kind === 'mode'
            ? `${target} is now in ${c.mode} mode.`
            : `Rollback requested: the leading controller restores the setpoints from before the last applied decision and switches to observe.`,
      })
      onChanged(c)
    } catch (err) {
      setOutcome({ kind: 'refused', text: refusalText(err, what) })
    } finally {
      setBusy(false)
      setAsking(null)
    }
  }
  return (
    <div className="controller-actions" aria-label="controller actions">
      <button type="button" data-action="mode" onClick={() => setAsking({ kind: 'mode', mode: other })}>
        Switch to {other}
      </button>
      <button type="button" data-action="rollback" onClick={() => setAsking({ kind: 'rollback' })}>
        Roll back
      </button>
      {outcome ? (
        <p
          className={outcome.kind === 'done' ? 'action-done' : 'action-refused'}
          role={outcome.kind === 'done' ? 'status' : 'alert'}
          data-outcome={outcome.kind}
        >
          {outcome.text}
        </p>
      ) : null}
      {asking ? (
        <ConfirmDialog
          title={asking.kind === 'mode' ? `Switch ${target} to ${asking.mode}?` : `Roll back ${target}?`}
          confirmLabel={asking.kind === 'mode' ? `Switch to ${asking.mode}` : 'Roll back'}
          busy={busy}
          onCancel={() => setAsking(null)}
          onConfirm={() => void run(asking)}
        >
          {asking.kind === 'mode' ? (
            asking.mode === 'enforce' ? (
              <p>
                The controller will apply its decisions through the actuators (replicas, batching, admission),
                starting with its next step. This needs an admin token.
              </p>
            ) : (
              <p>
                The controller will keep deciding and recording, but change nothing: decisions become
                recommendations. This needs an admin token.
              </p>
            )
          ) : (
            <p>
              The leading controller restores the setpoints from before the last applied decision, then
              switches to observe mode. This needs an admin token.
            </p>
          )}
        </ConfirmDialog>
      ) : null}
    </div>
  )
}
