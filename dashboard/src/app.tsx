import { Suspense, lazy } from 'react'
import { useAuth } from './auth.js'
import { StateMessage } from './components/state-message.js'
import { Header } from './components/header.js'
import { LoadBoundary, PageFailed } from './components/load-boundary.js'
import { LoginForm } from './components/login-form.js'
import { useRoute } from './hooks/use-route.js'
import { useSharedRange } from './hooks/use-shared-range.js'
import { FleetPage } from './pages/fleet.js'
import { NotFound } from './pages/not-found.js'

// Every page but the fleet page (the one a sign-in opens) loads on first visit, each in its own chunk (recharts in a
// shared one), so the entry bundle holds React, the frame and the fleet table only.
const AlertsPage = lazy(() => import('./pages/alerts.js').then((m) => ({ default: m.AlertsPage })))
const ControllerDetail = lazy(() =>
  import('./pages/controller-detail.js').then((m) => ({ default: m.ControllerDetail })),
)
const ControllerList = lazy(() =>
  import('./pages/controllers.js').then((m) => ({ default: m.ControllerList })),
)
const GpusPage = lazy(() => import('./pages/gpus.js').then((m) => ({ default: m.GpusPage })))
const ServiceDetail = lazy(() =>
  import('./pages/service-detail.js').then((m) => ({ default: m.ServiceDetail })),
)
const ServiceList = lazy(() => import('./pages/service-list.js').then((m) => ({ default: m.ServiceList })))
const SloDetail = lazy(() => import('./pages/slo-detail.js').then((m) => ({ default: m.SloDetail })))
const SloList = lazy(() => import('./pages/slos.js').then((m) => ({ default: m.SloList })))
const WhatifPage = lazy(() => import('./pages/whatif.js').then((m) => ({ default: m.WhatifPage })))

/**
 * The dashboard: the login form without a token, otherwise the page the hash route names.
 *
 * @example <AuthProvider initial={initialToken()}><App /></AuthProvider>
 */
export function App() {
  const { token, signOut } = useAuth()
  const [route, navigate] = useRoute()
  const range = useSharedRange(route)
  if (token === null) {
    return (
      <>
        <Header route={null} />
        <LoginForm />
      </>
    )
  }
  return (
    <>
      <Header route={route} range={range} onSignOut={() => signOut()} />
      <LoadBoundary key={route.page} fallback={(error) => <PageFailed error={error} />}>
        <Suspense fallback={<PageLoading />}>
          {route.page === 'service' ? (
            <ServiceDetail key={`${route.service}\u0000${route.model}`} route={route} navigate={navigate} />
          ) : route.page === 'slos' ? (
            <SloList />
          ) : route.page === 'slo' ? (
            <SloDetail key={route.name} name={route.name} />
          ) : route.page === 'gpus' ? (
            <GpusPage route={route} navigate={navigate} />
          ) : route.page === 'fleet' ? (
            <FleetPage route={route} navigate={navigate} />
          ) : route.page === 'alerts' ? (
            <AlertsPage route={route} navigate={navigate} />
          ) : route.page === 'controllers' ? (
            <ControllerList />
          ) : route.page === 'controller' ? (
            <ControllerDetail key={route.target} route={route} navigate={navigate} />
          ) : route.page === 'whatif' ? (
            <WhatifPage />
          ) : route.page === 'not-found' ? (
            <NotFound what={route.path} reason="The dashboard has no page at this address." />
          ) : (
            <ServiceList />
          )}
        </Suspense>
      </LoadBoundary>
    </>
  )
}

/** What shows while a page's chunk loads (once per page and session). */
function PageLoading() {
  return (
    <main className="page" data-page="loading">
      <StateMessage state="loading">Loading…</StateMessage>
    </main>
  )
}
