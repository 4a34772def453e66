import type { Route } from '../lib/route.js'
import { withRange } from '../lib/time-range.js'

/** The pages in the navigation. */
const NAV: ReadonlyArray<{ label: string; href: string; matches: (r: Route) => boolean }> = [
  { label: 'Fleet', href: '#/', matches: (r) => r.page === 'fleet' },
  { label: 'Services', href: '#/services', matches: (r) => r.page === 'list' || r.page === 'service' },
  { label: 'SLOs', href: '#/slos', matches: (r) => r.page === 'slos' || r.page === 'slo' },
  { label: 'GPUs', href: '#/gpus', matches: (r) => r.page === 'gpus' },
  { label: 'Alerts', href: '#/alerts', matches: (r) => r.page === 'alerts' },
  {
    label: 'Controllers',
    href: '#/controllers',
    matches: (r) => r.page === 'controllers' || r.page === 'controller',
  },
  { label: 'What-if', href: '#/whatif', matches: (r) => r.page === 'whatif' },
]

/**
 * The top bar: the product name, the navigation (its links carry the shared time range `range`), and a
 * sign-out button when signed in.
 *
 * @example <Header route={route} range="1h" onSignOut={signOut} />
 */
export function Header(props: { route: Route | null; range?: string; onSignOut?: () => void }) {
  return (
    <header className="topbar">
      <a className="brand" href={props.range ? withRange('#/', props.range) : '#/'}>
        <span className="brand-mark" aria-hidden="true" />
        tailguard
      </a>
      {props.route ? (
        <nav aria-label="main">
          {NAV.map((n) => (
            <a
              key={n.href}
              href={props.range ? withRange(n.href, props.range) : n.href}
              className={props.route && n.matches(props.route) ? 'active' : undefined}
            >
              {n.label}
            </a>
          ))}
        </nav>
      ) : null}
      <div className="topbar-end">
        {props.onSignOut ? (
          <button type="button" className="link" onClick={props.onSignOut}>
            Sign out
          </button>
        ) : null}
      </div>
    </header>
  )
}
