import type { ReactNode } from 'react'
import type { ApiError } from '../api.js'
import type { LoadStatus } from '../hooks/use-api.js'
import { NO_DATA } from '../lib/transforms.js'
import { StateMessage } from './state-message.js'

/** Props of {@link ChartFrame}. */
export interface ChartFrameProps {
  readonly title: string
  readonly subtitle?: ReactNode
  readonly status: LoadStatus
  readonly error: ApiError | null
  /** True when the response holds nothing to draw. */
  readonly empty: boolean
  readonly emptyText?: string
  readonly actions?: ReactNode
  readonly children: () => ReactNode
}

/**
 * A titled panel that shows a chart's loading, error or empty state, or the chart itself. The state is also
 * set as `data-state` (loading | error | empty | ready) for tests. An error during a refresh keeps the last
 * chart and adds a warning line.
 *
 * @example
 * <ChartFrame title="Latency" status={status} error={error} empty={!rows.length}>{() => <LineChart … />}</ChartFrame>
 */
export function ChartFrame(props: ChartFrameProps) {
  let state: 'loading' | 'error' | 'empty' | 'ready'
  if (props.status === 'loading') state = 'loading'
  else if (props.status === 'error' && props.empty) state = 'error'
  else if (props.empty) state = 'empty'
  else state = 'ready'
  return (
    <section className="panel" data-state={state} aria-label={props.title}>
      <header className="panel-head">
        <div>
          <h2>{props.title}</h2>
          {props.subtitle ? <p className="panel-sub">{props.subtitle}</p> : null}
        </div>
        {props.actions ? <div className="panel-actions">{props.actions}</div> : null}
      </header>
      {state === 'loading' ? (
        <StateMessage state="loading">Loading…</StateMessage>
      ) : state === 'error' ? (
        <StateMessage state="error">
          Could not load this chart: {props.error?.message ?? 'unknown error'}
        </StateMessage>
      ) : state === 'empty' ? (
        <StateMessage state="empty">{props.emptyText ?? NO_DATA}</StateMessage>
      ) : (
        <>
          {props.status === 'error' && props.error ? (
            <p className="stale" role="alert">
              Refresh failed ({props.error.message}); showing the last data.
            </p>
          ) : null}
          {props.children()}
        </>
      )}
    </section>
  )
}
