import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Pool } from 'undici'
import { afterAll, describe, expect, it } from 'vitest'
import { api, eventually, spawnCli } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'
import type { CliProcess } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'
import { nearestRank } from '../helpers/samples.js'

// A 3× load step on a real fleet of processes: a reference model server (`tailguard serve-model`, slow enough
// that the step overloads it), a sidecar agent with its proxy in front of it, a collector and a live controller
// in enforce mode. The load comes from this test as real streaming requests through the proxy (20% class 0).
// The controller sees only what the agent reports; it must answer the step by tightening the admission caps,
// and the time to first token the collector reports must end under the objective.
//
// What made it pass (it failed through session 8, and its printed evidence showed why): the agent gives a scraped
// server behind its proxy the proxy's service, so the server's running/waiting and tokens reach the target (and
// its request counters are not counted twice); the live observation carries those LLM signals (tokens per request:
// the capacity learned fell from 300-1300 to 20-60 req/s); the queue depth is read from the newest reports, not
// the settled window; admission predicts the wait from admitted arrivals against throughput and from the queue's
// own growth, caps capacity by what was measured under backlog, shortens a shed class's queue timeout, and the
// agent actuator carries that timeout to the agent (it used to keep the agent's 1 s, which was the 1 s p99).
// The load is set from the replica's capacity measured first, so the step overloads a fast machine and a slow one.

const ADMIN = 'admin-token-load-step-0123456789abcdef'
const READ = 'read-token-load-step-0123456789abcdef'
const AGENT = 'agent-token-load-step-0123456789abcdef'
const AGENT_ADMIN = 'agent-admin-token-load-step-0123456789'
const env = {
  TAILGUARD_API_TOKEN: ADMIN,
  TAILGUARD_READ_TOKEN: READ,
  TAILGUARD_AGENT_TOKEN: AGENT,
  TAILGUARD_AGENT_ADMIN_TOKEN: AGENT_ADMIN,
}
const OBJECTIVE_MS = 500
/**
 * Load before the step as a share of what the replica carries (measured first, so the step overloads it on a
 * fast machine and a slow one alike), and the step: 0.6 × 3 = 1.8 times capacity.
 */
const BASE_SHARE = 0.6
const STEP = 3
/** From the step to a 10 s ttft p99 under the objective, at most (docs/controller.md states it). */
const RECOVERY_MS = 45_000

const tempDir = useTempDirs('tg-load-step-')
const procs: CliProcess[] = []
afterAll(async () => {
  for (const p of procs.reverse()) await p.kill('SIGTERM')
})

interface Decision {
  outcome: string
  reason: string
  time: string
  actions: Array<{ kind: string }>
  setpointsAfter: { admission: Array<{ maxConcurrency: number }>; windowMs: number; maxBatch: number }
}

const completion = (cls: string) => ({
  path: '/v1/completions',
  method: 'POST' as const,
  headers: { 'content-type': 'application/json', 'x-tailguard-priority': cls },
  body: JSON.stringify({
    model: 'tailguard-mlp',
    prompt: 'Tell me about tail latency. '.repeat(4),
    max_tokens: 16,
    stream: true,
  }),
})

/** What the model server completes per second with `clients` streaming requests always open (closed loop). */
async function capacityOf(modelUrl: string, clients: number, ms: number): Promise<number> {
  const pool = new Pool(modelUrl, { connections: clients })
  const end = performance.now() + ms
  let done = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const res = await pool.request(completion('0'))
        await res.body.dump()
        done++
      }
    }),
  )
  const rate = done / ((performance.now() - t0) / 1000)
  await pool.destroy()
  return rate
}

/** Open-loop streaming load through the proxy: `rate()` requests per second, every fifth one class 0. */
function openLoop(proxyUrl: string, rate: () => number) {
  const pool = new Pool(proxyUrl, { connections: 256 })
  const status = new Map<string, number>()
  /**
   * Per request: when it was sent, its class, and its time to first token as the client saw it (Infinity when
   * it was refused or failed).
   */
  const firstTokens: Array<{ atMs: number; cls: string; ms: number }> = []
  let sent = 0
  let due = 0
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    due += ((now - last) / 1000) * rate()
    last = now
    for (; due >= 1; due--) {
      const cls = sent++ % 5 === 0 ? '0' : '1'
      const t0 = performance.now()
      const atMs = Date.now()
      pool
        .request(completion(cls))
        .then(async (res) => {
          let first = true
          for await (const _chunk of res.body) {
            if (first && res.statusCode === 200) firstTokens.push({ atMs, cls, ms: performance.now() - t0 })
            first = false
          }
          if (res.statusCode !== 200 || first) firstTokens.push({ atMs, cls, ms: Infinity })
          const k = `${cls}:${res.statusCode}`
          status.set(k, (status.get(k) ?? 0) + 1)
        })
        .catch(() => {
          firstTokens.push({ atMs, cls, ms: Infinity })
          status.set(`${cls}:error`, (status.get(`${cls}:error`) ?? 0) + 1)
        })
    }
  }, 20)
  return {
    status,
    /** Class `cls`'s share of requests sent in [fromMs, toMs) whose first token came within `ms`, refusals counting as misses (null: none). */
    attainment(cls: string, fromMs: number, toMs: number, ms: number): { share: number | null; n: number } {
      const mine = firstTokens.filter((f) => f.cls === cls && f.atMs >= fromMs && f.atMs < toMs)
      return {
        share: mine.length > 0 ? mine.filter((f) => f.ms <= ms).length / mine.length : null,
        n: mine.length,
      }
    },
    /** The client-side first-token p99 of class `cls` over requests sent in [fromMs, toMs) that got a first token. */
    p99(cls: string, fromMs: number, toMs: number): number | null {
      const v = firstTokens
        .filter((f) => f.cls === cls && f.atMs >= fromMs && f.atMs < toMs && Number.isFinite(f.ms))
        .map((f) => f.ms)
        .sort((a, b) => a - b)
      return v.length > 0 ? nearestRank(v, 0.99) : null
    },
    async stop() {
      clearInterval(timer)
      await pool.destroy()
    },
  }
}

// About a minute of wall time and four processes; TG_SKIP_LOAD_STEP=1 leaves it out of a quick local run. `npm test`
// runs it alone after the rest of the suite: beside a dozen other test processes on two cores, the controller and
// the model server are starved for whole seconds (seen: 14 decisions in 40 s, client-side ttft 20 s at 1.8×), and
// what the test would then measure is the machine, not the controller.
describe.skipIf(!!process.env.TG_SKIP_LOAD_STEP)('a 3× load step on a live fleet', () => {
  it('the controller in enforce mode tightens admission and the ttft p99 ends under the objective', async () => {
    const dir = tempDir()
    const [collectorPort, otlpPort, proxyPort] = [await freePort(), await freePort(), await freePort()]
    const base = `http://127.0.0.1:${collectorPort}`
    const agentUrl = `http://127.0.0.1:${otlpPort}`
    const proxyUrl = `http://127.0.0.1:${proxyPort}`
    const db = join(dir, 'tailguard.db')
    const collector = spawnCli(
      ['collector', '--port', String(collectorPort), '--db', db, '--log-level', 'warn'],
      env,
    )
    procs.push(collector)
    // --hidden 1024: about 15-20 req/s of capacity on a laptop core, so 3 × 6 req/s overloads it.
    const model = spawnCli(
      ['serve-model', '--port', '0', '--hidden', '1024', '--max-running', '64', '--log-level', 'info'],
      env,
    )
    procs.push(model)
    const [, modelUrl] = await model.waitFor(/on (http:\/\/[\d.:]+)/, 30_000)
    await collector.waitFor(/listening on http/, 30_000)
    // The replica's capacity at its running limit, measured on the server before the agent scrapes it.
    await capacityOf(modelUrl!, 64, 2000) // warm-up: the first seconds run the model cold (JIT, allocation)
    const capacity = await capacityOf(modelUrl!, 64, 4000)
    console.log(`capacity of the replica: ${capacity.toFixed(1)} req/s`)
    const BASE_RPS = BASE_SHARE * capacity
    const config = join(dir, 'tailguard.yaml')
    writeFileSync(
      config,
      `version: 1
agent:
  intervalMs: 500
  proxy:
    labels: { service: step-llm, model: "", version: "1", replica: r0 }
    classes:
      - { priorityClass: 0, maxConcurrency: 64, maxQueue: 128, queueTimeoutMs: 2000 }
      - { priorityClass: 1, maxConcurrency: 64, maxQueue: 128, queueTimeoutMs: 1000 }
controller:
  intervalMs: 1000
policy:
  tailguard:
    headroom: 0.2
controllers:
  - name: step-llm
    service: step-llm
    slos: []
    objective: { thresholdMs: ${OBJECTIVE_MS}, phase: ttft, target: 0.99 }
    mode: enforce
    policy: tailguard
    coldStartMs: 5000
    knobs: [admission, batching]
    bounds: { minReplicas: 1, maxReplicas: 1, maxWindowMs: 20, maxBatch: 64 }
    initial:
      replicas: 1
      windowMs: 5
      maxBatch: 16
      admission: [{ maxQueue: 128, maxConcurrency: 64 }, { maxQueue: 128, maxConcurrency: 64 }]
    actuators:
      - { type: agent, url: ${agentUrl}, token: ${AGENT_ADMIN} }
      - { type: model-server, urls: [${modelUrl}] }
`,
    )
    const agent = spawnCli(
      [
        'agent',
        '-c',
        config,
        '--collector',
        base,
        '--otlp-port',
        String(otlpPort),
        '--no-otlp-grpc',
        '--no-nvml',
        '--proxy-port',
        String(proxyPort),
        '--upstream',
        modelUrl!,
        // The model server's own queue (vllm:num_requests_waiting) joins the observation.
        '--scrape',
        `vllm=${modelUrl}/metrics`,
        '--log-level',
        'warn',
      ],
      env,
    )
    procs.push(agent)
    await eventually(async () => (await fetch(`${proxyUrl}/v1/models`).catch(() => null))?.status, 30_000)
    const controller = spawnCli(
      ['controller', '-c', config, '--db', db, '--collector', base, '--log-level', 'warn'],
      env,
    )
    procs.push(controller)
    await controller.waitFor(/1 target\(s\) \(step-llm\), every 1 s/, 30_000)

    let rate = BASE_RPS
    const load = openLoop(proxyUrl, () => rate)
    const decisions = async () =>
      (await api<{ decisions: Decision[] }>(base, '/api/v1/decisions?target=step-llm', READ)).body.decisions
    const setpoints = async () =>
      (
        await api<{ admission: Array<{ maxConcurrency: number }>; source: string }>(
          agentUrl,
          '/v1/setpoints',
          AGENT_ADMIN,
        )
      ).body
    const p99 = async (fromMs: number, toMs: number) =>
      (
        await api<{ count: number; quantiles: Record<string, number | null> }>(
          base,
          `/api/v1/latency?service=step-llm&phase=ttft&quantiles=0.99&from=${new Date(fromMs).toISOString()}&to=${new Date(toMs).toISOString()}`,
          READ,
        )
      ).body
    try {
      // Before the step: the policy learns (8 intervals) and its first decisions are applied.
      // (A precondition, not a bound of the answer: one run of about fifteen here stored no decision in 25 s.)
      await eventually(async () => (await decisions()).some((d) => d.outcome === 'applied'), 45_000, 1000)
      const before = await setpoints()
      expect(before.source).toBe('tailguard-controller/step-llm')
      // Not overloaded yet: both classes get the same (relaxed) cap.
      expect(before.admission[1]!.maxConcurrency).toBe(before.admission[0]!.maxConcurrency)
      let stepAt = Date.now()
      rate = BASE_RPS * STEP
      // After the step: an applied decision sheds the low class (its cap below class 0's), and the agent's
      // setpoints show it.
      const shedding = async () =>
        (await decisions()).find(
          (d) =>
            d.outcome === 'applied' &&
            Date.parse(d.time) > stepAt &&
            d.setpointsAfter.admission[1]!.maxConcurrency < d.setpointsAfter.admission[0]!.maxConcurrency,
        )
      // The capacity was measured on a shared machine: if the step did not overload the replica (its ttft p99
      // stays under the objective and nothing is shed), the load steps up by half again, up to twice.
      let tightened: Decision | undefined
      for (let tries = 0; tries < 3 && !tightened; tries++) {
        tightened = await eventually(shedding, 20_000, 1000).catch(() => undefined)
        if (tightened) break
        const now = Date.now()
        const r = await p99(now - 10_000, now)
        // Overloaded (or nothing to tell by yet): keep waiting for the controller rather than push harder.
        if (r.count === 0 || (r.quantiles['0.99'] ?? Infinity) > OBJECTIVE_MS) continue
        rate *= 1.5
        stepAt = Date.now() // the bounds below count from the step that overloads
        console.log(
          `no overload at ${(rate / 1.5).toFixed(1)} req/s (ttft p99 ${r.quantiles['0.99']} ms): ${rate.toFixed(1)} req/s`,
        )
      }
      if (!tightened) tightened = await eventually(shedding, 10_000, 1000)
      expect(tightened.reason).toMatch(
        /predicted wait (\d+|∞) ms \(queue \d+, admitted [\d.]+ of [\d.]+ req\/s offered \(utilization ([\d.]+|∞)\)\) > budget/,
      )
      const tightenedAt = Date.parse(tightened.time)
      // Then the p99 the collector reports for the last 10 s is under the objective, within RECOVERY_MS of the
      // step (the bound docs/controller.md states).
      const end = await eventually(
        async () => {
          const now = Date.now()
          // A window wholly after the step: one that reaches back before it would pass on the calm before.
          if (now - 10_000 < stepAt) return null
          const r = await p99(now - 10_000, now)
          return r.count > 0 && (r.quantiles['0.99'] ?? Infinity) <= OBJECTIVE_MS ? { ...r, now } : null
        },
        Math.max(1000, stepAt + RECOVERY_MS - Date.now()),
        1000,
      )
      expect(end.quantiles['0.99']).toBeLessThanOrEqual(OBJECTIVE_MS)
      // Class 0, as its clients see it, from one observation window after the shedding began: at least 99% of
      // its requests get their first token within the objective, while class 1 is what is shed.
      const settled = tightenedAt + 10_000
      await new Promise((r) => setTimeout(r, Math.max(0, settled + 17_000 - Date.now())))
      const class0 = load.attainment('0', settled, Date.now() - 2000, OBJECTIVE_MS)
      console.log(
        `step at +0 s; low class shed at +${((tightenedAt - stepAt) / 1000).toFixed(1)} s; ttft p99 (10 s) under ${OBJECTIVE_MS} ms at +${((end.now - stepAt) / 1000).toFixed(1)} s; ` +
          `class 0 after +${((settled - stepAt) / 1000).toFixed(0)} s: ${((class0.share ?? 0) * 100).toFixed(1)}% of ${class0.n} within ${OBJECTIVE_MS} ms (refusals count as misses); ` +
          `load: ${JSON.stringify(Object.fromEntries(load.status))}`,
      )
      expect(class0.n).toBeGreaterThan(20)
      expect(class0.share).toBeGreaterThanOrEqual(0.99)
      expect(load.status.get('1:429') ?? 0).toBeGreaterThan(0)
      // Every decision is stored with its reason and outcome.
      const all = await decisions()
      expect(all.length).toBeGreaterThan(0)
      all.forEach((d, i) => {
        expect(d.reason.length).toBeGreaterThan(0)
        // The newest may still be on its way to the actuators.
        expect(['applied', 'failed', 'skipped', ...(i === all.length - 1 ? ['pending'] : [])]).toContain(
          d.outcome,
        )
      })
    } catch (err) {
      // The evidence: ttft p99 per 10 s, what the load got, and every decision with its reason.
      const now = Date.now()
      for (let t = now - 60_000; t < now; t += 10_000) {
        const r = await p99(t, t + 10_000)
        console.log(
          `ttft p99 ${new Date(t).toISOString()} +10 s: ${r.quantiles['0.99']} ms (${r.count}); client side class 0 ${load.p99('0', t, t + 10_000)?.toFixed(0)} ms, class 1 ${load.p99('1', t, t + 10_000)?.toFixed(0)} ms`,
        )
      }
      console.log(Object.fromEntries(load.status))
      console.log(
        (await decisions())
          .map((d) => `${d.time} ${d.outcome} ${JSON.stringify(d.setpointsAfter.admission)} ${d.reason}`)
          .join('\n'),
      )
      const all = await decisions()
      console.log('last decision:', JSON.stringify(all[all.length - 1]))
      throw err
    } finally {
      await load.stop()
    }
  }, 120_000)
})
