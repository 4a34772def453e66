import { createRequire } from 'node:module'
import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'

// light-my-request (fastify's inject) required cookie@2, whose engines field says node >= 22, so `npm ci`
// warned EBADENGINE on Node 20 although our engines say ^20.19.0. package.json overrides it with cookie 1.1.1
// (engines >= 18), which exports the same stringifySetCookie({ name, value }) that light-my-request calls.

describe('cookie under light-my-request (package.json overrides)', () => {
  it('is a 1.x release that supports Node 20', () => {
    const require = createRequire(createRequire(import.meta.url).resolve('light-my-request'))
    const pkg = require('cookie/package.json') as { version: string; engines: { node: string } }
    expect(pkg.version).toMatch(/^1\./)
    expect(pkg.engines.node).toBe('>=18')
  })

  it('still serves inject with cookies, the only place light-my-request uses it', async () => {
    const app = Fastify()
    app.get('/', async (req) => ({ cookie: req.headers.cookie }))
    const res = await app.inject({ method: 'GET', url: '/', cookies: { session: 'a b', theme: 'dark' } })
    expect(res.json()).toEqual({ cookie: 'session=a%20b; theme=dark' })
    await app.close()
  })
})
