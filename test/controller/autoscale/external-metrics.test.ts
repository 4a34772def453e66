/* eslint-disable @typescript-eslint/no-explicit-any -- recorded JSON fixtures are untyped */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  buildExternalMetricsApp,
  createRecommendationBoard,
  formatQuantity,
  parseLabelSelector,
} from '../../../controller/index.js'
import { packageRoot } from '../../../collector/index.js'
import { recommendation } from './fixtures.js'
import { selfSigned } from '../../helpers/tls.js'

const TOKEN = 'hpa-read-token-0123456789'
const recorded = (name: string) =>
  JSON.parse(readFileSync(join(packageRoot(), 'test', 'fixtures', 'k8s', name), 'utf8')) as Record<
    string,
    any
  >

/** Every key of `recorded` is in `ours` with a value of the same JSON type, recursively (arrays by first item). */
function sameShape(ours: unknown, rec: unknown, path = '$'): void {
  const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)
  expect(kind(ours), path).toBe(kind(rec))
  if (Array.isArray(rec) && Array.isArray(ours)) {
    if (rec.length > 0) {
      expect(ours.length, `${path}: items`).toBeGreaterThan(0)
      sameShape(ours[0], rec[0], `${path}[0]`)
    }
  } else if (rec && typeof rec === 'object') {
    for (const k of Object.keys(rec)) {
      expect(ours, path).toHaveProperty([k])
      if (k === 'metricLabels') continue // label keys differ by metric; both are string maps
      sameShape((ours as Record<string, unknown>)[k], (rec as Record<string, unknown>)[k], `${path}.${k}`)
    }
  }
}

describe('Kubernetes external metrics API', () => {
  const board = createRecommendationBoard()
  board.publish(recommendation({ desiredReplicas: 4 }))
  board.publish(recommendation({ ref: { service: 'vision', model: 'resnet' }, desiredReplicas: 2 }))
  const app = buildExternalMetricsApp({ source: board, tokens: [TOKEN] })
  const auth = { authorization: `Bearer ${TOKEN}` }

  it('answers an ExternalMetricValueList with the recorded kubectl get --raw shape, field by field', async () => {
    const res = await app.inject({
      url: '/apis/external.metrics.k8s.io/v1beta1/namespaces/default/tailguard_desired_replicas?labelSelector=service%3Dchat',
      headers: auth,
    })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    const rec = recorded('external-metric-value-list.json')
    sameShape(body, rec)
    expect(Object.keys(body).sort()).toEqual(Object.keys(rec).sort())
    expect(Object.keys(body.items[0]).sort()).toEqual(Object.keys(rec.items[0]).sort())
    expect(body.kind).toBe(rec.kind)
    expect(body.apiVersion).toBe(rec.apiVersion)
    expect(body.items).toEqual([
      {
        metricName: 'tailguard_desired_replicas',
        metricLabels: { service: 'chat' },
        timestamp: '2026-11-23T01:00:00Z',
        value: '4',
      },
    ])
    expect(body.items[0].timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  })

  it('lists its metrics as an APIResourceList of the recorded shape', async () => {
    const res = await app.inject({ url: '/apis/external.metrics.k8s.io/v1beta1', headers: auth })
    const body = res.json()
    const rec = recorded('api-resource-list.json')
    sameShape(body, rec)
    expect(body.resources.map((r: { name: string }) => r.name)).toEqual([
      'tailguard_desired_replicas',
      'tailguard_queue_depth',
      'tailguard_concurrency',
      'tailguard_burn_rate',
    ])
  })

  it('selects by labels, formats quantities, and refuses bad requests as Kubernetes Status objects', async () => {
    const sel = await app.inject({
      url: '/apis/external.metrics.k8s.io/v1beta1/namespaces/ml/tailguard_burn_rate?labelSelector=service!=chat',
      headers: auth,
    })
    expect(sel.json().items).toEqual([
      expect.objectContaining({ metricLabels: { service: 'vision', model: 'resnet' }, value: '500m' }),
    ])
    const unknown = await app.inject({
      url: '/apis/external.metrics.k8s.io/v1beta1/namespaces/ml/p99',
      headers: auth,
    })
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toMatchObject({
      kind: 'Status',
      code: 404,
      message: expect.stringMatching(/unknown external metric "p99"/),
    })
    const setBased = await app.inject({
      url: '/apis/external.metrics.k8s.io/v1beta1/namespaces/ml/tailguard_queue_depth?labelSelector=service%20in%20(a,b)',
      headers: auth,
    })
    expect(setBased.statusCode).toBe(400)
    const noToken = await app.inject({ url: '/apis/external.metrics.k8s.io/v1beta1' })
    expect(noToken.statusCode).toBe(401)
    const wrong = await app.inject({
      url: '/apis/external.metrics.k8s.io/v1beta1',
      headers: { authorization: 'Bearer x' },
    })
    expect(wrong.statusCode).toBe(401)
    expect(formatQuantity(3)).toBe('3')
    expect(formatQuantity(2.007)).toBe('2007m')
    expect(formatQuantity(0.0001)).toBe('1m')
    expect(formatQuantity(1.9999)).toBe('2')
    expect(parseLabelSelector('a=b, c==d ,e!=f')).toEqual({ equal: { a: 'b', c: 'd' }, notEqual: { e: 'f' } })
  })

  describe('over TLS, as an APIService reaches it', () => {
    let dir: string
    let tlsApp: ReturnType<typeof buildExternalMetricsApp>
    let port: number
    let pem: { ca: Buffer; cert: Buffer; key: Buffer; clientCert: Buffer; clientKey: Buffer }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tg-extm-'))
      const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' })
      selfSigned(dir, 'ca', 'test-ca')
      for (const name of ['server', 'client']) {
        ssl(
          'req',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          `${name}.key`,
          '-out',
          `${name}.csr`,
          '-subj',
          `/CN=${name === 'server' ? 'localhost' : 'front-proxy-client'}`,
        )
        ssl(
          'x509',
          '-req',
          '-in',
          `${name}.csr`,
          '-CA',
          'ca.crt',
          '-CAkey',
          'ca.key',
          '-CAcreateserial',
          '-out',
          `${name}.crt`,
          '-days',
          '1',
        )
      }
      const read = (f: string) => readFileSync(join(dir, f))
      pem = {
        ca: read('ca.crt'),
        cert: read('server.crt'),
        key: read('server.key'),
        clientCert: read('client.crt'),
        clientKey: read('client.key'),
      }
      tlsApp = buildExternalMetricsApp({
        source: board,
        tokens: [TOKEN],
        tls: { cert: pem.cert, key: pem.key, clientCa: pem.ca },
      })
      await tlsApp.listen({ host: '127.0.0.1', port: 0 })
      port = (tlsApp.server.address() as { port: number }).port
    })
    afterAll(async () => {
      await tlsApp.close()
      rmSync(dir, { recursive: true, force: true })
    })

    const get = (path: string, extra: { cert?: Buffer; key?: Buffer; headers?: Record<string, string> }) =>
      new Promise<{ status: number; body: string }>((ok, fail) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path,
            ca: pem.ca,
            servername: 'localhost',
            cert: extra.cert,
            key: extra.key,
            headers: extra.headers,
          },
          (res) => {
            let body = ''
            res.on('data', (d: Buffer) => (body += d.toString()))
            res.on('end', () => ok({ status: res.statusCode ?? 0, body }))
          },
        )
        req.on('error', fail)
        req.end()
      })

    it('accepts the API server client certificate or a token, and nothing else', async () => {
      const path =
        '/apis/external.metrics.k8s.io/v1beta1/namespaces/default/tailguard_desired_replicas?labelSelector=service%3Dchat'
      const withCert = await get(path, { cert: pem.clientCert, key: pem.clientKey })
      expect(withCert.status).toBe(200)
      expect(JSON.parse(withCert.body).items[0].value).toBe('4')
      const withToken = await get(path, { headers: { authorization: `Bearer ${TOKEN}` } })
      expect(withToken.status).toBe(200)
      const anonymous = await get(path, {})
      expect(anonymous.status).toBe(401)
    })
  })
})
