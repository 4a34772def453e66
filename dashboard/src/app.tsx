import { useAuth } from './auth.js'
import { Header } from './components/header.js'
import { LoginForm } from './components/login-form.js'
import { useRoute } from './hooks/use-route.js'
import { useSharedRange } from './hooks/use-shared-range.js'
import { AlertsPage } from './pages/alerts.js'
import { FleetPage } from './pages/fleet.js'
import { ControllerDetail } from './pages/controller-detail.js'
import { ControllerList } from './pages/controllers.js'
import { GpusPage } from './pages/gpus.js'
import { NotFound } from './pages/not-found.js'
import { ServiceDetail } from './pages/service-detail.js'
import { ServiceList } from './pages/service-list.js'
import { SloDetail } from './pages/slo-detail.js'
import { SloList } from './pages/slos.js'
import { WhatifPage } from './pages/whatif.js'

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
    </>
  )
}
