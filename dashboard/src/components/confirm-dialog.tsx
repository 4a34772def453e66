import { useEffect, useRef } from 'react'
import type { ReactNode } from 'react'

/** Props of {@link ConfirmDialog}. */
export interface ConfirmDialogProps {
  readonly title: string
  readonly children: ReactNode
  readonly confirmLabel: string
  readonly busy?: boolean
  readonly onConfirm: () => void
  readonly onCancel: () => void
}

/**
 * A modal confirmation (`role="dialog"`, `aria-modal`): a title, what will happen, and Cancel / confirm
 * buttons. Cancel has the focus when it opens, so Enter never confirms by accident; Escape cancels.
 *
 * @example <ConfirmDialog title="Roll back chat?" confirmLabel="Roll back" onConfirm={go} onCancel={close}>…</ConfirmDialog>
 */
export function ConfirmDialog(props: ConfirmDialogProps) {
  const cancel = useRef<HTMLButtonElement>(null)
  const { onCancel } = props
  useEffect(() => {
    cancel.current?.focus()
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onCancel()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [onCancel])
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby="confirm-title">
        <h2 id="confirm-title">{props.title}</h2>
        <div className="modal-body">{props.children}</div>
        <div className="modal-actions">
          <button type="button" ref={cancel} onClick={props.onCancel} disabled={props.busy}>
            Cancel
          </button>
          <button
            type="button"
            className="primary"
            data-confirm="true"
            onClick={props.onConfirm}
            disabled={props.busy}
          >
            {props.busy ? 'Working…' : props.confirmLabel}
          </button>
        </div>
      </div>
    </div>
  )
}
