import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { SIGNATURE_HEADER, verifySignature } from '../../../collector/index.js'
import {
  createAgentActuator,
  createKubernetesActuator,
  createModelServerActuator,
  createProcessActuator,
  createTritonActuator,
  createWebhookActuator,
} from '../../../controller/index.js'
import type { Actuator } from '../../../controller/index.js'
import {
  startFakeAgent,
  startFakeKubernetes,
  startFakeModelServer,
  startFakeTriton,
  startServer,
} from '../../helpers/contract-servers.js'
import type { TestServer } from '../../helpers/contract-servers.js'
import { CLI } from '../../helpers/cli.js'
import { freePorts } from '../../helpers/ports.js'

const ctx = { target: 'chat', fencingToken: 3, decisionId: 41, reason: 'load up 3x' }
const TOKEN = 'agent-admin-token-0123456789'
const servers: TestServer[] = []
const actuators: Actuator[] = []
afterEach(async () => {
  for (const a of actuators.splice(0)) await a.close?.()
  for (const s of servers.splice(0)) await s.close()
})
const track = <T extends TestServer>(s: T): T => (servers.push(s), s)

describe('agent setpoints actuator (contract 2)', () => {
  it('reads and puts admission caps with the fencing token, keeping a class queue timeout the policy does not set', async () => {
    const agent = track(await startFakeAgent({ token: TOKEN }))
    const a = createAgentActuator({ url: agent.url, token: TOKEN })
    expect(await a.read()).toEqual({
      ok: true,
      reading: {
        admission: [
          { maxQueue: 64, maxConcurrency: 16, queueTimeoutMs: 2000 },
          { maxQueue: 64, maxConcurrency: 16, queueTimeoutMs: 2000 },
        ],
      },
    })
    const r = await a.apply(
      {
        admission: [
          { maxQueue: 64, maxConcurrency: 16 },
          { maxQueue: 4, maxConcurrency: 2, queueTimeoutMs: 25 },
        ],
      },
      ctx,
    )
    expect(r).toEqual({ ok: true })
    const put = JSON.parse(agent.requests.at(-1)!.body)
    expect(put).toEqual({
      admission: [
        { priorityClass: 0, maxConcurrency: 16, maxQueue: 64, queueTimeoutMs: 2000 },
        { priorityClass: 1, maxConcurrency: 2, maxQueue: 4, queueTimeoutMs: 25 },
      ],
      fencingToken: 3,
      source: 'tailguard-controller/chat',
    })
  })

  it('answers a deposed leader with a failure naming TG_ERR_SETPOINTS_FENCED; a bad token is a failure too', async () => {
    const agent = track(await startFakeAgent({ token: TOKEN }))
    const a = createAgentActuator({ url: agent.url, token: TOKEN })
    expect(
      (await a.apply({ admission: [{ maxQueue: 1, maxConcurrency: 1 }] }, { ...ctx, fencingToken: 5 })).ok,
    ).toBe(true)
    const late = await a.apply(
      { admission: [{ maxQueue: 9, maxConcurrency: 9 }] },
      { ...ctx, fencingToken: 4 },
    )
    expect(late).toEqual({ ok: false, error: expect.stringMatching(/409 TG_ERR_SETPOINTS_FENCED/) })
    expect(agent.state.puts).toHaveLength(1)
    const wrong = createAgentActuator({ url: agent.url, token: 'wrong-token-123456' })
    expect(await wrong.read()).toEqual({ ok: false, error: expect.stringMatching(/HTTP 401/) })
  })

  it('reports an unreachable agent as a failure, not a throw', async () => {
    const a = createAgentActuator({ url: 'http://127.0.0.1:9', timeoutMs: 500 })
    expect(await a.read()).toEqual({ ok: false, error: expect.stringMatching(/ECONNREFUSED/) })
  })
})

describe('model server batching actuator (contract 3)', () => {
  it('puts window and max batch on every replica and reads them back', async () => {
    const m1 = track(await startFakeModelServer({ token: 'model-token-0123456' }))
    const m2 = track(await startFakeModelServer({ token: 'model-token-0123456' }))
    const a = createModelServerActuator({ urls: [m1.url, m2.url], token: 'model-token-0123456' })
    expect(await a.apply({ batching: { windowMs: 12, maxBatch: 24 } }, ctx)).toEqual({ ok: true })
    expect(m1.state).toEqual({ windowMs: 12, maxBatch: 24 })
    expect(m2.state).toEqual({ windowMs: 12, maxBatch: 24 })
    expect(await a.read()).toEqual({ ok: true, reading: { batching: { windowMs: 12, maxBatch: 24 } } })
    const bad = await a.apply({ batching: { windowMs: -1, maxBatch: 24 } }, ctx)
    expect(bad).toEqual({ ok: false, error: expect.stringMatching(/HTTP 400/) })
  })
})

describe('Triton actuator (model repository extension)', () => {
  it('reloads the model with its configuration, changing only max_batch_size and max_queue_delay_microseconds', async () => {
    const t = track(await startFakeTriton('resnet50'))
    const a = createTritonActuator({ url: t.url, model: 'resnet50' })
    expect(await a.read()).toEqual({ ok: true, reading: { batching: { windowMs: 0.1, maxBatch: 8 } } })
    expect(await a.apply({ batching: { windowMs: 2.5, maxBatch: 16 } }, ctx)).toEqual({ ok: true })
    const load = t.requests.find((r) => r.method === 'POST')!
    expect(load.path).toBe('/v2/repository/models/resnet50/load')
    const body = JSON.parse(load.body) as { parameters: { config: string } }
    expect(Object.keys(body)).toEqual(['parameters'])
    const cfg = JSON.parse(body.parameters.config)
    expect(cfg).toMatchObject({
      name: 'resnet50',
      platform: 'onnxruntime_onnx',
      max_batch_size: 16,
      dynamic_batching: { preferred_batch_size: [4, 8], max_queue_delay_microseconds: 2500 },
    })
    expect(await a.read()).toEqual({ ok: true, reading: { batching: { windowMs: 2.5, maxBatch: 16 } } })
    const missing = createTritonActuator({ url: t.url, model: 'nope' })
    expect(await missing.apply({ batching: { windowMs: 1, maxBatch: 1 } }, ctx)).toEqual({
      ok: false,
      error: expect.stringMatching(/HTTP 400 unknown model/),
    })
  })
})

describe('Kubernetes scale subresource actuator', () => {
  it('reads spec and ready replicas and PUTs a Scale with the resourceVersion it read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-k8s-'))
    writeFileSync(join(dir, 'token'), 'sa-token-abc\n')
    try {
      const k = track(
        await startFakeKubernetes({ namespace: 'llm', name: 'vllm', token: 'sa-token-abc', replicas: 2 }),
      )
      const a = createKubernetesActuator({
        kind: 'Deployment',
        namespace: 'llm',
        name: 'vllm',
        apiServer: k.url,
        tokenFile: join(dir, 'token'),
      })
      expect(await a.read()).toEqual({
        ok: true,
        reading: { replicas: { desired: 2, ready: 2, starting: 0 } },
      })
      expect(await a.apply({ replicas: 4 }, ctx)).toEqual({ ok: true, detail: 'spec.replicas 2 → 4' })
      const put = k.requests.find((r) => r.method === 'PUT')!
      expect(put.path).toBe('/apis/apps/v1/namespaces/llm/deployments/vllm/scale')
      expect(JSON.parse(put.body)).toMatchObject({
        apiVersion: 'autoscaling/v1',
        kind: 'Scale',
        metadata: { name: 'vllm', namespace: 'llm', resourceVersion: '1000' },
        spec: { replicas: 4 },
      })
      k.state.ready = 3
      expect(await a.read()).toEqual({
        ok: true,
        reading: { replicas: { desired: 4, ready: 3, starting: 1 } },
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('finds the in-cluster API server from the environment and fails clearly outside a cluster', async () => {
    const out = createKubernetesActuator({ kind: 'StatefulSet', namespace: 'a', name: 'b', env: {} })
    expect(await out.read()).toEqual({ ok: false, error: expect.stringMatching(/not in a cluster/) })
    const inCluster = createKubernetesActuator({
      kind: 'StatefulSet',
      namespace: 'a',
      name: 'b',
      env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '9' },
      tokenFile: '/nonexistent/token',
    })
    expect(await inCluster.read()).toEqual({
      ok: false,
      error: expect.stringMatching(/kubernetes credentials/),
    })
  })
})

describe('signed webhook actuator', () => {
  it('POSTs the change signed with HMAC-SHA256 as the SLO webhooks are, with an idempotency key', async () => {
    const secret = 'webhook-secret-0123456789'
    let verified = false
    const hook = track(
      await startServer((r, res) => {
        verified = verifySignature(secret, r.headers[SIGNATURE_HEADER] as string, r.body, Date.now() / 1000)
        res.writeHead(verified ? 204 : 401)
        res.end()
      }),
    )
    const a = createWebhookActuator({ url: `${hook.url}/scale`, secret, knobs: ['replicas'] })
    expect(await a.apply({ replicas: 5 }, ctx)).toEqual({ ok: true })
    expect(verified).toBe(true)
    const r = hook.requests[0]!
    expect(r.headers['idempotency-key']).toBe('chat-41')
    expect(JSON.parse(r.body)).toEqual({
      target: 'chat',
      decisionId: 41,
      fencingToken: 3,
      reason: 'load up 3x',
      change: { replicas: 5 },
    })
    const wrong = createWebhookActuator({
      url: `${hook.url}/scale`,
      secret: 'another-secret-0123456',
      knobs: ['replicas'],
    })
    expect(await wrong.apply({ replicas: 5 }, ctx)).toEqual({
      ok: false,
      error: expect.stringMatching(/HTTP 401/),
    })
  })
})

describe('local process actuator', () => {
  const replica = [
    process.execPath,
    '-e',
    `require('node:http').createServer((q, s) => { if (q.url === '/v1/batching') { s.end(JSON.stringify({ windowMs: 7, maxBatch: 4 })); return } s.end('{"status":"ok"}') }).listen(Number(process.argv[1]), '127.0.0.1')`,
    '{port}',
  ]
  /** An actuator over `replica` on ports base…, behind `agentUrl`, recording its events in `events`. */
  const replicasOn = (base: number, agentUrl: string, events: string[]) => {
    const a = createProcessActuator({
      command: replica,
      basePort: base,
      agentUrl,
      pollMs: 20,
      drainGraceMs: 2000,
      onEvent: (line) => events.push(line),
    })
    actuators.push(a)
    return a
  }

  it('starts replicas, adds them to the agent once healthy, drains before stopping on scale-down', async () => {
    const agent = track(await startFakeAgent())
    // Both replicas' ports below the ephemeral range: a port there can be any test's client's source port.
    const base = await freePorts(2)
    const events: string[] = []
    const a = replicasOn(base, agent.url, events)
    expect(await a.apply({ replicas: 2 }, ctx)).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/started/),
    })
    // A replica that exits before it is ready (its port taken after all) shows in the events.
    await expect
      .poll(() => agent.state.upstreams.length, { timeout: 10_000 })
      .toBe(2)
      .catch((e: Error) => {
        throw new Error(`${e.message}\nreplica events:\n${events.join('\n')}`)
      })
    expect(agent.state.upstreams.map((u) => u.state)).toEqual(['active', 'active'])
    expect(await a.read()).toEqual({ ok: true, reading: { replicas: { desired: 2, ready: 2, starting: 0 } } })
    // One request is in flight on the newest replica: scale-down marks it draining and waits.
    agent.state.upstreams[1]!.inFlight = 1
    expect((await a.apply({ replicas: 1 }, ctx)).ok).toBe(true)
    await expect
      .poll(() => agent.state.upstreams.find((u) => u.url.endsWith(String(base + 1)))?.state)
      .toBe('draining')
    expect(agent.state.upstreams).toHaveLength(2)
    expect(await a.read()).toEqual({ ok: true, reading: { replicas: { desired: 1, ready: 1, starting: 0 } } })
    agent.state.upstreams[1]!.inFlight = 0
    await expect.poll(() => agent.state.upstreams.length, { timeout: 5000 }).toBe(1)
    expect(agent.state.upstreams[0]!.url).toBe(`http://127.0.0.1:${base}`)
  })

  it('says when the agent refuses the upstream set: on ready, on draining and on stop', async () => {
    // The agent wants a token the actuator does not have: every PUT /v1/upstreams gets 401.
    const agent = track(await startFakeAgent({ token: TOKEN }))
    const base = await freePorts(1)
    const events: string[] = []
    const a = createProcessActuator({
      command: replica,
      basePort: base,
      agentUrl: agent.url,
      pollMs: 20,
      drainGraceMs: 300,
      onEvent: (line) => events.push(line),
    })
    actuators.push(a)
    const url = `http://127.0.0.1:${base}`
    expect((await a.apply({ replicas: 1 }, ctx)).ok).toBe(true)
    await expect.poll(() => events.join('\n'), { timeout: 10_000 }).toMatch(`replica ${url} ready, but`)
    expect((await a.apply({ replicas: 0 }, ctx)).ok).toBe(true)
    await expect.poll(() => events.join('\n'), { timeout: 10_000 }).toMatch(`${url} drained and stopped`)
    const refused = events.filter((e) => e.includes('did not take it'))
    expect(refused.map((e) => e.replace(/: .*$/, ''))).toEqual([
      `replica ${url} ready, but the agent did not take it`,
      `replica ${url} draining, but the agent did not take it`,
      `replica ${url} stopped, but the agent did not take it`,
    ])
    expect(refused[1]).toMatch(/PUT \/v1\/upstreams.*401/)
    expect(agent.state.upstreams).toEqual([])
  })

  it('skips a port another server holds, so the server does not join the upstream set', async () => {
    const agent = track(await startFakeAgent())
    const base = await freePorts(3)
    // Something else on base + 1 that answers every path with 200, /healthz included.
    const foreign = createServer((_q, s) => s.end('{"status":"ok"}'))
    await new Promise<void>((r) => foreign.listen(base + 1, '127.0.0.1', r))
    try {
      const events: string[] = []
      const a = replicasOn(base, agent.url, events)
      expect(await a.apply({ replicas: 2 }, ctx)).toEqual({
        ok: true,
        detail: `started http://127.0.0.1:${base}, http://127.0.0.1:${base + 2} (ports ${base + 1} in use, skipped)`,
      })
      expect(events).toContain(`port(s) ${base + 1} in use by another process; skipped`)
      await expect.poll(() => agent.state.upstreams.length, { timeout: 10_000 }).toBe(2)
      expect(agent.state.upstreams.map((u) => u.url).sort()).toEqual([
        `http://127.0.0.1:${base}`,
        `http://127.0.0.1:${base + 2}`,
      ])
    } finally {
      await new Promise((r) => foreign.close(r))
    }
  })

  it('fails naming the address when no replica could listen there, starting nothing', async () => {
    // 192.0.2.1 (TEST-NET-1) is no address of this machine; a port past 65535 is no port.
    const events: string[] = []
    const far = createProcessActuator({
      command: replica,
      basePort: 9100,
      host: '192.0.2.1',
      onEvent: (l) => events.push(l),
    })
    actuators.push(far)
    expect(await far.apply({ replicas: 2 }, ctx)).toEqual({
      ok: false,
      error: expect.stringMatching(
        /^started 0 of 2 replicas: cannot listen on 192\.0\.2\.1:9100: listen EADDRNOTAVAIL/,
      ),
    })
    const top = createProcessActuator({ command: replica, basePort: 65_535, host: '127.0.0.1' })
    actuators.push(top)
    const r = await top.apply({ replicas: 2 }, ctx)
    expect(r).toMatchObject({
      ok: false,
      error: expect.stringMatching(/of 2 replicas: port 65536 is outside 1–65535$/),
    })
    expect(await far.read()).toEqual({
      ok: true,
      reading: { replicas: { desired: 0, ready: 0, starting: 0 } },
    })
    expect(events).toEqual([])
  })

  it('brings a real tailguard serve-model replica up on the default health path, and a KServe one on its own', async () => {
    const [base, kserveBase] = [await freePorts(1), await freePorts(2)]
    const model = createProcessActuator({
      command: [process.execPath, CLI, 'serve-model', '--port', '{port}', '--log-level', 'fatal'],
      basePort: base,
      pollMs: 50,
    })
    actuators.push(model)
    expect((await model.apply({ replicas: 1 }, ctx)).ok).toBe(true)
    await expect
      .poll(async () => model.read(), { timeout: 20_000, interval: 100 })
      .toEqual({ ok: true, reading: { replicas: { desired: 1, ready: 1, starting: 0 } } })
    // A server that answers only KServe v2's readiness path: ready with healthPath set, not without.
    const kserve = [
      process.execPath,
      '-e',
      `require('node:http').createServer((q, s) => { s.statusCode = q.url === '/v2/health/ready' ? 200 : 404; s.end() }).listen(Number(process.argv[1]), '127.0.0.1')`,
      '{port}',
    ]
    const triton = createProcessActuator({
      command: kserve,
      basePort: kserveBase,
      healthPath: '/v2/health/ready',
      pollMs: 20,
    })
    const unset = createProcessActuator({ command: kserve, basePort: kserveBase + 1, pollMs: 20 })
    actuators.push(triton, unset)
    await triton.apply({ replicas: 1 }, ctx)
    await unset.apply({ replicas: 1 }, ctx)
    await expect
      .poll(async () => triton.read(), { timeout: 10_000 })
      .toEqual({ ok: true, reading: { replicas: { desired: 1, ready: 1, starting: 0 } } })
    await new Promise((r) => setTimeout(r, 500))
    expect(await unset.read()).toEqual({
      ok: true,
      reading: { replicas: { desired: 1, ready: 0, starting: 1 } },
    })
  }, 30_000)

  it('gives each replica its slot and port in its arguments and environment (one GPU per replica)', async () => {
    const base = await freePorts(2)
    const a = createProcessActuator({
      command: [
        process.execPath,
        '-e',
        `require('node:http').createServer((q, s) => s.end(JSON.stringify({ gpu: process.env.CUDA_VISIBLE_DEVICES, name: process.env.TG_NAME, arg: process.argv[2] }))).listen(Number(process.argv[1]), '127.0.0.1')`,
        '{port}',
        'replica-{slot}',
      ],
      replicaEnv: { CUDA_VISIBLE_DEVICES: '{slot}', TG_NAME: 'r{slot}@{port}' },
      basePort: base,
      pollMs: 20,
    })
    actuators.push(a)
    await a.apply({ replicas: 2 }, ctx)
    await expect
      .poll(async () => a.read(), { timeout: 10_000 })
      .toEqual({ ok: true, reading: { replicas: { desired: 2, ready: 2, starting: 0 } } })
    const seen = await Promise.all(
      [0, 1].map(async (i) => (await fetch(`http://127.0.0.1:${base + i}/`)).json()),
    )
    expect(seen).toEqual([
      { gpu: '0', name: `r0@${base}`, arg: 'replica-0' },
      { gpu: '1', name: `r1@${base + 1}`, arg: 'replica-1' },
    ])
  })

  it('drops a replica whose command cannot start at once, saying why, instead of waiting out readyTimeoutMs', async () => {
    const events: string[] = []
    const base = await freePorts(1)
    const a = createProcessActuator({
      command: ['/nonexistent/model-server', '--port', '{port}'],
      basePort: base,
      readyTimeoutMs: 60_000,
      onEvent: (l) => events.push(l),
    })
    actuators.push(a)
    expect((await a.apply({ replicas: 1 }, ctx)).ok).toBe(true)
    await expect
      .poll(() => events, { timeout: 5000 })
      .toEqual([`replica http://127.0.0.1:${base} could not start: spawn /nonexistent/model-server ENOENT`])
    expect(await a.read()).toEqual({ ok: true, reading: { replicas: { desired: 0, ready: 0, starting: 0 } } })
  })
})
