import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app.js'
import { AuthProvider, initialToken } from './auth.js'
import { parseRoute } from './lib/route.js'
import { requestFleetEarly } from './pages/fleet.js'

const root = document.getElementById('root')
if (root) {
  const token = initialToken()
  // The fleet page's requests leave before the first render (they are what its first load waits for).
  if (token !== null) requestFleetEarly(parseRoute(window.location.hash), token)
  createRoot(root).render(
    <StrictMode>
      <AuthProvider initial={token}>
        <App />
      </AuthProvider>
    </StrictMode>,
  )
}
