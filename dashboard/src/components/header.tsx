import type { Route } from '../lib/route.js'

/** The pages in the navigation. SLOs and GPUs join here once their APIs exist. */
const NAV: ReadonlyArray<{ label: string; href: string; matches: (r: Route) => boolean }> = [
  { label: 'Services', href: '#/', matches: (r) => r.page === 'list' || r.page === 'service' },
  { label: 'SLOs', href: '#/slos', matches: (r) => r.page === 'slos' || r.page === 'slo' },
  { label: 'GPUs', href: '#/gpus', matches: (r) => r.page === 'gpus' },
  {
    label: 'Controllers',
    href: '#/controllers',
    matches: (r) => r.page === 'controllers' || r.page === 'controller',
  },
]

/**
 * The top bar: the product name, the navigation, and a sign-out button when signed in.
 *
 * @example <Header route={route} onSignOut={signOut} />
 */
export function Header(props: { route: Route | null; onSignOut?: () => void }) {
  return (
    <header className="topbar">
      <a className="brand" href="#/">
        <span className="brand-mark" aria-hidden="true" />
        tailguard
      </a>
      {props.route ? (
        <nav aria-label="main">
          {NAV.map((n) => (
            <a
              key={n.href}
              href={n.href}
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
