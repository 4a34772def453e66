import type { ReactNode } from 'react'

/** A view that has nothing to draw yet: still loading, failed, or empty. */
export type MessageState = 'loading' | 'error' | 'empty'

/**
 * The message a panel or page shows instead of its content: a spinner while loading (`role="status"`), an
 * error (`role="alert"`), or an empty-state text. One markup for every chart and page.
 *
 * @example <StateMessage state="loading">Loading services…</StateMessage>
 */
export function StateMessage({ state, children }: { state: MessageState; children: ReactNode }) {
  if (state === 'loading')
    return (
      <div className="chart-state" role="status">
        <span className="spinner" aria-hidden="true" /> {children}
      </div>
    )
  if (state === 'error')
    return (
      <div className="chart-state chart-error" role="alert">
        {children}
      </div>
    )
  return <div className="chart-state chart-empty">{children}</div>
}
