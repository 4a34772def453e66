import { createHash, timingSafeEqual } from 'node:crypto'

/** What a token may do. `admin` includes `read`; `agent` may only send reports. */
export type Scope = 'agent' | 'read' | 'admin'

export interface TokenEntry {
  readonly token: string
  readonly scope: Scope
  /** A name for logs and metrics; the token itself is never logged. */
  readonly name?: string
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest()

/**
 * Checks bearer tokens in constant time: every configured token is compared (as SHA-256 digests, so
 * lengths never leak) whatever matches first.
 *
 * @example
 * ```ts
 * const auth = createTokenAuth([{ token: 'abc', scope: 'read' }])
 * auth.check('Bearer abc', 'read') // { kind: 'ok', name: 'token-0' }
 * ```
 */
export function createTokenAuth(entries: readonly TokenEntry[]) {
  const table = entries.map((e, i) => ({
    digest: digest(e.token),
    scope: e.scope,
    name: e.name ?? `token-${i}`,
  }))
  return {
    check(
      header: string | undefined,
      need: Scope,
    ):
      | { kind: 'ok'; name: string }
      | { kind: 'missing' }
      | { kind: 'invalid' }
      | { kind: 'forbidden'; have: Scope } {
      if (!header) return { kind: 'missing' }
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header)
      if (!m) return { kind: 'invalid' }
      const presented = digest(m[1]!)
      let found: (typeof table)[number] | undefined
      for (const t of table) if (timingSafeEqual(t.digest, presented) && !found) found = t
      if (!found) return { kind: 'invalid' }
      if (allows(found.scope, need)) return { kind: 'ok', name: found.name }
      return { kind: 'forbidden', have: found.scope }
    },
  }
}

/** True when a token of scope `have` may do what needs `need`. */
export function allows(have: Scope, need: Scope): boolean {
  if (have === need) return true
  return have === 'admin' && need === 'read'
}
