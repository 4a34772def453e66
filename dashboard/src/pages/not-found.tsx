/** Props of {@link NotFound}. */
export interface NotFoundProps {
  /** What was asked for, e.g. `/servces` or `service 'chat'`. */
  readonly what: string
  /** Why there is nothing, in one sentence. */
  readonly reason: string
}

/**
 * The page for something that is not there (an unknown route, a service that never reported): says so and
 * links back to the fleet overview, instead of an empty page or a silent redirect.
 *
 * @example <NotFound what="/servces" reason="The dashboard has no page at this address." />
 */
export function NotFound({ what, reason }: NotFoundProps) {
  return (
    <main className="page" data-page="not-found">
      <h1>Not found: {what}</h1>
      <p role="alert">{reason}</p>
      <p>
        <a href="#/" className="back">
          ← Fleet overview
        </a>
      </p>
    </main>
  )
}
