import { Component } from 'react'
import type { ReactNode } from 'react'

/** Props of {@link LoadBoundary}. */
export interface LoadBoundaryProps {
  /** What shows instead of the children once one of them failed (a chunk that did not load, a render error). */
  readonly fallback: (error: Error) => ReactNode
  readonly children: ReactNode
}

/**
 * Catches what a part of the page throws while it loads or renders, so that one part failing shows a message in its
 * place instead of React unmounting the whole dashboard (a blank page). Pages and the fleet chart load in chunks of
 * their own: a chunk that no longer exists (the collector was upgraded while the tab stayed open) or a lost
 * connection makes the lazy import throw (React logs what was caught). Give it a `key` that changes with the route to try again elsewhere.
 *
 * @example <LoadBoundary key={route.page} fallback={(e) => <PageFailed error={e} />}><Page /></LoadBoundary>
 */
export class LoadBoundary extends Component<LoadBoundaryProps, { error: Error | null }> {
  override state: { error: Error | null } = { error: null }

  static getDerivedStateFromError(error: unknown): { error: Error } {
    return { error: error instanceof Error ? error : new Error(String(error)) }
  }

  override render(): ReactNode {
    return this.state.error ? this.props.fallback(this.state.error) : this.props.children
  }
}

/**
 * The page shown when a page could not be loaded: what failed, and a reload (which fetches the current dashboard).
 *
 * @example <PageFailed error={new Error('Failed to fetch dynamically imported module')} />
 */
export function PageFailed({ error }: { error: Error }) {
  return (
    <main className="page" data-page="load-failed">
      <h1>This page could not be loaded</h1>
      <p role="alert">
        {error.message}. The collector may have been restarted or upgraded since this tab was opened;
        reloading fetches the current dashboard.
      </p>
      <p>
        <button type="button" onClick={() => window.location.reload()}>
          Reload
        </button>{' '}
        <a href="#/" className="back">
          ← Fleet overview
        </a>
      </p>
    </main>
  )
}
