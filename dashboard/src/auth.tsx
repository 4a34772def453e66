/**
 * The API token: read once from the URL fragment (`#token=…`), then removed from the address bar and kept in
 * sessionStorage (per tab, gone when the tab closes). Never put in query strings, never logged.
 *
 * @example
 * ```tsx
 * const { token, signOut } = useAuth()
 * ```
 */
import { createContext, useCallback, useContext, useEffect, useMemo, useState } from 'react'
import type { ReactNode } from 'react'
import { takeToken } from './lib/route.js'

const STORAGE_KEY = 'tailguard.token'

function storage(): Storage | null {
  try {
    return window.sessionStorage
  } catch {
    return null
  }
}

/**
 * The token to start with: one in the fragment wins (it is stored and the fragment cleaned with
 * `history.replaceState`, so it stays out of history and bookmarks), else the one kept in sessionStorage.
 *
 * @example const token = initialToken() // null when the user must sign in
 */
export function initialToken(): string | null {
  return consumeToken() ?? storage()?.getItem(STORAGE_KEY) ?? null
}

/**
 * Takes a token out of the current fragment: stores it, strips it from the address bar (`replaceState`, so it
 * stays out of history) and tells the router the fragment changed. `null` when the fragment holds none.
 *
 * @example window.addEventListener('hashchange', () => consumeToken())
 */
export function consumeToken(): string | null {
  const { token, hash } = takeToken(window.location.hash)
  if (token === null) return null
  storage()?.setItem(STORAGE_KEY, token)
  window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}${hash}`)
  window.dispatchEvent(new HashChangeEvent('hashchange'))
  return token
}

/** What components read from {@link AuthProvider}. */
export interface AuthState {
  readonly token: string | null
  /** Why the user has to sign in again (e.g. the collector refused the token), shown by the login form. */
  readonly problem: string | null
  signIn(token: string): void
  signOut(problem?: string): void
}

const AuthContext = createContext<AuthState | null>(null)

/**
 * Holds the token for the app.
 *
 * @example <AuthProvider initial={initialToken()}><App /></AuthProvider>
 */
export function AuthProvider(props: { initial: string | null; children: ReactNode }) {
  const [token, setToken] = useState<string | null>(props.initial)
  const [problem, setProblem] = useState<string | null>(null)
  const signIn = useCallback((t: string) => {
    storage()?.setItem(STORAGE_KEY, t)
    setProblem(null)
    setToken(t)
  }, [])
  const signOut = useCallback((why?: string) => {
    storage()?.removeItem(STORAGE_KEY)
    setProblem(why ?? null)
    setToken(null)
  }, [])
  // A token pasted into the fragment of an open tab is taken at once (no reload) and stripped from the URL.
  useEffect(() => {
    const onHash = () => {
      const t = consumeToken()
      if (t !== null) signIn(t)
    }
    window.addEventListener('hashchange', onHash)
    return () => window.removeEventListener('hashchange', onHash)
  }, [signIn])
  const value = useMemo(() => ({ token, problem, signIn, signOut }), [token, problem, signIn, signOut])
  return <AuthContext.Provider value={value}>{props.children}</AuthContext.Provider>
}

/**
 * The token state; only inside {@link AuthProvider}.
 *
 * @example const { token } = useAuth()
 */
export function useAuth(): AuthState {
  const ctx = useContext(AuthContext)
  if (!ctx) throw new Error('useAuth needs an <AuthProvider>')
  return ctx
}
