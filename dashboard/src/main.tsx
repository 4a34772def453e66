import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app.js'
import { AuthProvider, initialToken } from './auth.js'

const root = document.getElementById('root')
if (root) {
  createRoot(root).render(
    <StrictMode>
      <AuthProvider initial={initialToken()}>
        <App />
      </AuthProvider>
    </StrictMode>,
  )
}
