import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { buildProgram, run } from '../../bin/tailguard.js'
import { proxyAgentArgs, spawnCli } from '../helpers/cli.js'

// `tailguard agent` runs beside every model server, so it loads only what it needs: not the collector's store
// (kysely, the database drivers) and server (fastify's plugins, the routes), not the controller, not undici.
// A module hook records every module the real CLI process resolves while it proxies and reports.

const dir = mkdtempSync(join(tmpdir(), 'tg-lean-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const HOOKS = `
import { appendFileSync } from 'node:fs'
let out
export function initialize(data) { out = data.out }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context)
  appendFileSync(out, r.url + '\\n')
  return r
}
`
const REGISTER = `
import { register } from 'node:module'
register(new URL('./hooks.mjs', import.meta.url), { data: { out: process.env.TG_TEST_LOADED } })
`

/** Module URLs that must not be loaded by a standalone agent, with why. */
const HEAVY: ReadonlyArray<readonly [RegExp, string]> = [
  [/\/node_modules\/kysely\//, 'kysely (the store)'],
  [/\/node_modules\/pg\//, 'pg (the store)'],
  [/\/node_modules\/better-sqlite3\//, 'better-sqlite3 (the store)'],
  [/\/node_modules\/@fastify\/(static|swagger|etag)\//, "the collector server's plugins"],
  [/\/node_modules\/undici\//, 'undici (the agent has its own HTTP client)'],
  [
    /\/dist\/collector\/(store\/(index|create-store|sql-store)|routes\/slos|run|app)\.js$/,
    "the collector's store and server",
  ],
  [/\/dist\/controller\//, 'the controller'],
]

describe('tailguard agent is lean', () => {
  it('proxies and reports without loading the store, the collector server, the controller or undici', async () => {
    writeFileSync(join(dir, 'hooks.mjs'), HOOKS)
    writeFileSync(join(dir, 'register.mjs'), REGISTER)
    const loaded = join(dir, 'loaded.txt')
    writeFileSync(loaded, '')
    let reports = 0
    const collector = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        reports++
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"stored"}')
      })
    })
    const upstream = createServer((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    })
    await Promise.all([collector, upstream].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))))
    const port = (s: typeof collector) => (s.address() as AddressInfo).port
    const agent = spawnCli(
      proxyAgentArgs(`http://127.0.0.1:${port(upstream)}`, `http://127.0.0.1:${port(collector)}`),
      {
        TAILGUARD_AGENT_TOKEN: 'agent-token-0123456789',
        TG_TEST_LOADED: loaded,
        NODE_OPTIONS: `--import ${pathToFileURL(join(dir, 'register.mjs')).href}`,
      },
    )
    try {
      const [, proxyPort] = await agent.waitFor(/proxy on http:\/\/[^:]+:(\d+)/)
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`http://127.0.0.1:${proxyPort}/v1/x`)
        expect(await res.text()).toBe('ok')
      }
      // A report has gone out (the agent's shipper and whatever it loads on first use).
      for (let i = 0; i < 100 && reports === 0; i++) await new Promise((r) => setTimeout(r, 100))
      expect(reports).toBeGreaterThan(0)
    } finally {
      await agent.kill()
      await Promise.all([collector, upstream].map((s) => new Promise((r) => s.close(r))))
    }
    const urls = readFileSync(loaded, 'utf8').split('\n').filter(Boolean)
    // The hook saw the modules the agent does load (so an empty list cannot pass).
    expect(urls.some((u) => /\/node_modules\/fastify\//.test(u))).toBe(true)
    expect(urls.some((u) => /\/dist\/agent\/proxy\/proxy\.js$/.test(u))).toBe(true)
    const heavy = HEAVY.flatMap(([re, why]) => urls.filter((u) => re.test(u)).map((u) => `${why}: ${u}`))
    expect(heavy).toEqual([])
  }, 60_000)

  it('serve-model (a replica a process actuator starts) loads neither the OTLP receivers nor the store', async () => {
    writeFileSync(join(dir, 'hooks.mjs'), HOOKS)
    writeFileSync(join(dir, 'register.mjs'), REGISTER)
    const loaded = join(dir, 'loaded-model.txt')
    writeFileSync(loaded, '')
    const model = spawnCli(['serve-model', '--port', '0', '--log-level', 'fatal'], {
      TG_TEST_LOADED: loaded,
      NODE_OPTIONS: `--import ${pathToFileURL(join(dir, 'register.mjs')).href}`,
    })
    try {
      const [, port] = await model.waitFor(/on http:\/\/[^:]+:(\d+)/)
      const res = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'Hello', max_tokens: 2 }),
      })
      expect(res.status).toBe(200)
    } finally {
      await model.kill()
    }
    const urls = readFileSync(loaded, 'utf8').split('\n').filter(Boolean)
    expect(urls.some((u) => /\/dist\/agent\/model-server\/server\.js$/.test(u))).toBe(true)
    const grpc: ReadonlyArray<readonly [RegExp, string]> = [
      [/\/node_modules\/@grpc\//, 'gRPC (the OTLP/gRPC receiver)'],
      [/\/node_modules\/protobufjs\//, 'protobufjs (the OTLP decoders)'],
      [/\/node_modules\/@opentelemetry\//, 'the OpenTelemetry API (the agent SDK)'],
    ]
    const heavy = [...HEAVY, ...grpc].flatMap(([re, why]) =>
      urls.filter((u) => re.test(u)).map((u) => `${why}: ${u}`),
    )
    expect(heavy).toEqual([])
  }, 60_000)

  it('loads each subcommand alone under its own name (what `run` does for a named one)', async () => {
    const io = { out: () => {}, err: () => {}, errRaw: () => {}, isTTY: false }
    const all = (await buildProgram(io)).commands.map((c) => c.name())
    expect(all).toContain('agent')
    for (const name of all) {
      const alone = await buildProgram(io, name)
      expect(alone.commands.map((c) => c.name())).toEqual([name])
    }
  })

  it('lists every subcommand when the first argument is not one (an option first, a misspelling)', async () => {
    let out = ''
    const io = {
      out: (t: string) => void (out += t + '\n'),
      err: (t: string) => void (out += t + '\n'),
      errRaw: () => {},
      isTTY: false,
    }
    expect(await run(['node', 'tailguard', '--help', 'agent'], io)).toBe(0)
    expect(out).toMatch(/^ {2}start /m)
    expect(out).toMatch(/^ {2}agent /m)
    out = ''
    expect(await run(['node', 'tailguard', 'agnet'], io)).toBe(1)
    expect(out).toContain('(Did you mean agent?)')
  })
})
