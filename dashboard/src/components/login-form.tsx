import { useState } from 'react'
import type { FormEvent } from 'react'
import { useAuth } from '../auth.js'

/**
 * Asks for an API token (read scope) when there is none, or when the collector refused the last one, whose
 * reason it shows. The token is kept in sessionStorage for this tab only.
 *
 * @example <LoginForm />
 */
export function LoginForm() {
  const { signIn, problem } = useAuth()
  const [value, setValue] = useState('')
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const t = value.trim()
    if (t) signIn(t)
  }
  return (
    <main className="login">
      <form className="panel login-form" onSubmit={submit} aria-label="sign in">
        <h2>Sign in</h2>
        <p className="muted">
          Paste an API token with read scope. It is kept for this browser tab only. You can also open the
          dashboard as <code>…/#token=&lt;token&gt;</code>.
        </p>
        {problem ? (
          <p className="login-error" role="alert">
            {problem}
          </p>
        ) : null}
        <label htmlFor="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={value}
          onChange={(e) => setValue(e.target.value)}
          autoFocus
        />
        <button type="submit" className="primary" disabled={value.trim() === ''}>
          Open dashboard
        </button>
      </form>
    </main>
  )
}
