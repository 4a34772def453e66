/**
 * Small local HTTP servers implementing, exactly, the wire contracts the controller's actuators speak:
 * the agent setpoints/upstreams API (contract 2), the reference model server batching API (contract 3),
 * Triton's model configuration and repository load endpoints, and the Kubernetes scale subresource.
 * They listen on 127.0.0.1 port 0 and record every request.
 */
import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'

export interface Recorded {
  readonly method: string
  readonly path: string
  readonly auth: string | undefined
  readonly headers: IncomingMessage['headers']
  readonly body: string
}

export interface TestServer {
  readonly url: string
  readonly requests: Recorded[]
  close(): Promise<void>
}

type Handler = (req: Recorded, res: ServerResponse) => void

function send(res: ServerResponse, status: number, body?: unknown) {
  const text = body === undefined ? '' : JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/** Starts a server whose handler sees each request with its whole body. */
export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: Recorded[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const r: Recorded = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        auth: req.headers.authorization,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      }
      requests.push(r)
      try {
        handler(r, res)
      } catch (err) {
        send(res, 500, { message: String(err) })
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const addr = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${addr.port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** The agent's setpoints and upstreams API (contract 2), with fencing. */
export async function startFakeAgent(opts: { token?: string; classes?: number } = {}) {
  const state = {
    admission: Array.from({ length: opts.classes ?? 2 }, (_, priorityClass) => ({
      priorityClass,
      maxConcurrency: 16,
      maxQueue: 64,
      queueTimeoutMs: 2000,
    })),
    fencingToken: 0,
    source: 'config',
    updatedAt: new Date(0).toISOString(),
    upstreams: [] as Array<{ url: string; state: 'active' | 'draining'; inFlight: number }>,
    puts: [] as Array<{ fencingToken: number | undefined; admission: unknown }>,
  }
  const view = () => ({
    admission: state.admission,
    fencingToken: state.fencingToken,
    source: state.source,
    updatedAt: state.updatedAt,
    stale: false,
  })
  const server = await startServer((r, res) => {
    if (opts.token && r.auth !== `Bearer ${opts.token}`)
      return send(res, 401, { code: 'TG_ERR_UNAUTHORIZED', statusCode: 401, message: 'invalid bearer token' })
    if (r.path === '/v1/setpoints' && r.method === 'GET') return send(res, 200, view())
    if (r.path === '/v1/setpoints' && r.method === 'PUT') {
      const b = JSON.parse(r.body) as { admission?: unknown; fencingToken?: number; source?: string }
      if (!Array.isArray(b.admission))
        return send(res, 400, {
          code: 'TG_ERR_BAD_REQUEST',
          statusCode: 400,
          message: 'admission: expected an array',
        })
      if (b.fencingToken !== undefined && b.fencingToken < state.fencingToken)
        return send(res, 409, {
          code: 'TG_ERR_SETPOINTS_FENCED',
          statusCode: 409,
          message: `fencingToken ${b.fencingToken} is lower than ${state.fencingToken}`,
        })
      state.puts.push({ fencingToken: b.fencingToken, admission: b.admission })
      state.admission = b.admission as typeof state.admission
      if (b.fencingToken !== undefined) state.fencingToken = b.fencingToken
      state.source = b.source ?? 'api'
      state.updatedAt = new Date().toISOString()
      return send(res, 200, view())
    }
    if (r.path === '/v1/upstreams' && r.method === 'GET')
      return send(res, 200, { upstreams: state.upstreams })
    if (r.path === '/v1/upstreams' && r.method === 'PUT') {
      const b = JSON.parse(r.body) as { upstreams: Array<{ url: string; state?: 'active' | 'draining' }> }
      state.upstreams = b.upstreams.map((u) => ({
        url: u.url,
        state: u.state ?? 'active',
        inFlight: state.upstreams.find((x) => x.url === u.url)?.inFlight ?? 0,
      }))
      return send(res, 200, { upstreams: state.upstreams })
    }
    return send(res, 404, {
      code: 'TG_ERR_NOT_FOUND',
      statusCode: 404,
      message: `no route ${r.method} ${r.path}`,
    })
  })
  return { ...server, state }
}

/** The reference model server's batching API (contract 3) plus /healthz. */
export async function startFakeModelServer(opts: { token?: string } = {}) {
  const state = { windowMs: 5, maxBatch: 8 }
  const server = await startServer((r, res) => {
    if (r.path === '/healthz') return send(res, 200, { status: 'ok' })
    if (opts.token && r.auth !== `Bearer ${opts.token}`)
      return send(res, 401, { message: 'invalid bearer token' })
    if (r.path === '/v1/batching' && r.method === 'GET') return send(res, 200, state)
    if (r.path === '/v1/batching' && r.method === 'PUT') {
      const b = JSON.parse(r.body) as { windowMs?: number; maxBatch?: number }
      if (
        (b.windowMs !== undefined && !(b.windowMs >= 0)) ||
        (b.maxBatch !== undefined && !(b.maxBatch >= 1))
      )
        return send(res, 400, { message: 'windowMs must be ≥ 0 and maxBatch ≥ 1' })
      if (b.windowMs !== undefined) state.windowMs = b.windowMs
      if (b.maxBatch !== undefined) state.maxBatch = b.maxBatch
      return send(res, 200, state)
    }
    return send(res, 404, { message: 'not found' })
  })
  return { ...server, state }
}

/**
 * Triton's HTTP endpoints for one model: `GET /v2/models/{m}/config` (the ModelConfig as JSON, uint64 fields
 * as strings, as protobuf's JSON mapping writes them) and `POST /v2/repository/models/{m}/load` with
 * `{"parameters":{"config":"<JSON>"}}` (200 with an empty body; 400 `{"error": …}` on a bad request).
 */
export async function startFakeTriton(model: string) {
  const state = {
    config: {
      name: model,
      platform: 'onnxruntime_onnx',
      max_batch_size: 8,
      input: [{ name: 'input', data_type: 'TYPE_FP32', dims: ['3', '224', '224'] }],
      dynamic_batching: { preferred_batch_size: [4, 8], max_queue_delay_microseconds: '100' },
    } as Record<string, unknown>,
    loads: 0,
  }
  const server = await startServer((r, res) => {
    if (r.method === 'GET' && r.path === `/v2/models/${model}/config`) return send(res, 200, state.config)
    if (r.method === 'POST' && r.path === `/v2/repository/models/${model}/load`) {
      let cfg: Record<string, unknown>
      try {
        const b = JSON.parse(r.body || '{}') as { parameters?: { config?: unknown } }
        if (typeof b.parameters?.config !== 'string') throw new Error('parameters.config must be a string')
        cfg = JSON.parse(b.parameters.config) as Record<string, unknown>
      } catch (err) {
        return send(res, 400, { error: `failed to load '${model}': ${(err as Error).message}` })
      }
      if (cfg['name'] !== model)
        return send(res, 400, { error: `config name '${String(cfg['name'])}' does not match '${model}'` })
      state.config = cfg
      state.loads++
      res.writeHead(200, { 'content-length': 0 })
      return res.end()
    }
    return send(res, 400, { error: `unknown model or route ${r.path}` })
  })
  return { ...server, state }
}

/**
 * The Kubernetes API for a Deployment's scale subresource: `GET`/`PUT`
 * `/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale` (autoscaling/v1 Scale; a PUT with a stale
 * `metadata.resourceVersion` gets 409 with a `Status` body) and `GET …/deployments/{name}` for readiness.
 * `setReplicas` changes the count as another controller (an HPA) would.
 */
export async function startFakeKubernetes(opts: {
  namespace: string
  name: string
  token: string
  replicas: number
}) {
  const state = { replicas: opts.replicas, ready: opts.replicas, resourceVersion: 1000, puts: 0 }
  const base = `/apis/apps/v1/namespaces/${opts.namespace}/deployments/${opts.name}`
  const scale = () => ({
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: opts.name,
      namespace: opts.namespace,
      uid: '7d7c4b1e-0000-4000-8000-000000000001',
      resourceVersion: String(state.resourceVersion),
      creationTimestamp: '2026-11-23T10:00:00Z',
    },
    spec: { replicas: state.replicas },
    status: { replicas: state.replicas, selector: `app=${opts.name}` },
  })
  const server = await startServer((r, res) => {
    if (r.auth !== `Bearer ${opts.token}`)
      return send(res, 401, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Unauthorized',
        reason: 'Unauthorized',
        code: 401,
      })
    if (r.method === 'GET' && r.path === `${base}/scale`) return send(res, 200, scale())
    if (r.method === 'GET' && r.path === base)
      return send(res, 200, {
        kind: 'Deployment',
        apiVersion: 'apps/v1',
        metadata: { name: opts.name, namespace: opts.namespace },
        spec: { replicas: state.replicas },
        status: { replicas: state.replicas, readyReplicas: state.ready, availableReplicas: state.ready },
      })
    if (r.method === 'PUT' && r.path === `${base}/scale`) {
      const b = JSON.parse(r.body) as {
        kind?: string
        apiVersion?: string
        metadata?: { resourceVersion?: string }
        spec?: { replicas?: number }
      }
      if (b.kind !== 'Scale' || b.apiVersion !== 'autoscaling/v1' || typeof b.spec?.replicas !== 'number')
        return send(res, 400, {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: 'bad Scale',
          reason: 'BadRequest',
          code: 400,
        })
      if (b.metadata?.resourceVersion && b.metadata.resourceVersion !== String(state.resourceVersion))
        return send(res, 409, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `Operation cannot be fulfilled on deployments.apps "${opts.name}": the object has been modified; please apply your changes to the latest version and try again`,
          reason: 'Conflict',
          details: { name: opts.name, group: 'apps', kind: 'deployments' },
          code: 409,
        })
      state.replicas = b.spec.replicas
      state.resourceVersion++
      state.puts++
      return send(res, 200, scale())
    }
    return send(res, 404, {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'NotFound',
      code: 404,
      message: 'not found',
    })
  })
  return {
    ...server,
    state,
    setReplicas(n: number) {
      state.replicas = n
      state.ready = n
      state.resourceVersion++
    },
  }
}
