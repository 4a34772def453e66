// Issue #15 acceptance: the control step's cost, so 1,000 targets fit in one controller process at a 5 s
// interval. A real SQLite store holds a minute of reports for 1,000 services; one round steps every target:
// lease upkeep, observation from the store (merged histograms and counts), actuator read, policy step,
// rails, decision stored when the policy acts, status written. The baseline is the policy step alone.
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStore, encodeHistogram, newHistogram } from '../../collector/index.js'
import type { ControllerTargetConfig, IntervalReport } from '../../collector/index.js'
import { createLiveController, createTargetPolicy, initialSetpoints } from '../../controller/index.js'
import type { Actuator, FleetObservation, LiveTarget } from '../../controller/index.js'
import type { Bench } from './table.js'

const TARGETS = Number(process.env['TG_BENCH_TARGETS'] ?? 1000)
const INTERVAL_MS = 5000

/** An actuator that holds its state in memory: the bench measures the controller, not a network. */
function memoryActuator(replicas: number): Actuator {
  let desired = replicas
  return {
    name: 'memory',
    knobs: ['replicas', 'batching', 'admission'],
    async read() {
      return { ok: true, reading: { replicas: { desired, ready: desired, starting: 0 } } }
    },
    async apply(change) {
      if (change.replicas !== undefined) desired = change.replicas
      return { ok: true }
    },
  }
}

const target = (i: number): ControllerTargetConfig => ({
  name: `svc-${i}`,
  service: `svc-${i}`,
  slos: [],
  objective: { thresholdMs: 200 },
  mode: 'enforce',
  policy: 'hpa',
  knobs: ['replicas', 'batching', 'admission'],
  bounds: { minReplicas: 1, maxReplicas: 64 },
  initial: { replicas: 4, windowMs: 5, maxBatch: 16, admission: [{ maxQueue: 64, maxConcurrency: 16 }] },
  actuators: [{ type: 'webhook', url: 'http://127.0.0.1:9/unused' }],
})

const bench: Bench = {
  name: 'controller',
  async run(log) {
    const dir = mkdtempSync(join(tmpdir(), 'tg-bench-ctl-'))
    const store = await createStore({ url: join(dir, 'tailguard.db') })
    try {
      await store.migrate()
      const t0 = Math.floor(Date.now() / 10_000) * 10_000 - 60_000
      const h = newHistogram()
      for (let i = 0; i < 500; i++) h.recordValue(40_000 + ((i * 7919) % 200_000))
      const encoded = encodeHistogram(h)
      log(`ingesting a minute of reports for ${TARGETS} services …`)
      let seq = 1
      let t = t0
      const ingestUntil = async (endMs: number) => {
        for (; t < endMs; t += 5000) {
          const report: IntervalReport = {
            version: 1,
            agent: { id: 'bench', instance: 'bench-1', node: 'n0' },
            seq: seq++,
            intervalStartMs: t,
            intervalEndMs: t + 5000,
            series: Array.from({ length: TARGETS }, (_, i) => ({
              labels: { service: `svc-${i}`, model: '', version: '', replica: 'r0', node: 'n0' },
              histograms: { total: encoded, kernel: encoded },
              requests: { ok: 500, error: 0, shed: 0 },
            })),
          }
          await store.ingest(report, t + 5000)
        }
      }
      await ingestUntil(t0 + 60_000)
      const targets: LiveTarget[] = Array.from({ length: TARGETS }, (_, i) => {
        const cfg = target(i)
        const p = createTargetPolicy('hpa', cfg)
        if (!p.ok) throw new Error(p.error)
        return { name: cfg.name!, config: cfg, policy: p.policy, actuators: [memoryActuator(4)] }
      })

      // Baseline: the policy step alone on a representative observation.
      const obs: FleetObservation = {
        intervalMs: 10_000,
        arrivalRps: { 6: 100, 10: 100, 60: 100 },
        latencyMs: {
          queue: { p50: null, p99: null, count: 0 },
          service: { p50: 120, p99: 230, count: 1000 },
          e2e: { p50: 120, p99: 230, count: 1000 },
          ttft: { p50: null, p99: null, count: 0 },
          tpot: { p50: null, p99: null, count: 0 },
        },
        queueDepth: 3,
        queueDepthByClass: [3],
        inFlight: 12,
        concurrency: { 6: 15, 10: 15, 60: 15 },
        batchSize: { mean: 4, max: 8 },
        errorBudget: { remaining: 0.8, burnRate: 1.2 },
        gpuUtilization: 0.75,
        replicas: { ready: 4, starting: 0 },
        completed: 1000,
        shed: 0,
      }
      const policy = targets[0]!.policy
      let state = policy.init(initialSetpoints(targets[0]!.config))
      const n = 200_000
      const p0 = process.hrtime.bigint()
      for (let i = 0; i < n; i++) state = policy.step(state, obs, i * INTERVAL_MS).state
      const policyUs = Number(process.hrtime.bigint() - p0) / 1000 / n

      const c = createLiveController({ store, targets, intervalMs: INTERVAL_MS, holder: 'bench' })
      const rounds: number[] = []
      let decisions = 0
      for (let r = 0; r < 8; r++) {
        const now = t0 + 62_500 + r * INTERVAL_MS
        // The fleet keeps reporting (not timed: that is the collector's work).
        await ingestUntil(now - 2500)
        const s = process.hrtime.bigint()
        const res = await c.round(now)
        rounds.push(Number(process.hrtime.bigint() - s) / 1e6)
        decisions += res.decisions.length
        log(
          `round ${r + 1}: ${rounds.at(-1)!.toFixed(0)} ms, ${res.leading.length} targets led, ${res.decisions.length} decisions`,
        )
      }
      await c.stop()
      // The first round registers the targets and takes every lease. After it, with a 5 s interval over the
      // store's 10 s buckets, every other round reads a new bucket (decode and merge its histograms) and the
      // next one reuses it; the mean of the two is what an interval costs.
      const later = rounds.slice(1)
      const miss = later.filter((_, i) => i % 2 === 1)
      const hit = later.filter((_, i) => i % 2 === 0)
      const avg = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length
      const mean = avg(later)
      const row = (what: string, ms: number) => [
        what,
        (ms * 1000) / TARGETS,
        ms,
        ms / INTERVAL_MS,
        (ms * 1000) / TARGETS / policyUs,
      ]
      return {
        title: `Controller: one control round over ${TARGETS.toLocaleString('en-US')} targets (SQLite store, ${INTERVAL_MS / 1000} s interval)`,
        columns: ['what', 'per target (µs)', 'per round (ms)', 'share of the interval', '× policy step'],
        rows: [
          row('policy step alone (hpa; baseline)', (policyUs * TARGETS) / 1000),
          row(`first round (register, take ${TARGETS} leases)`, rounds[0]!),
          row('round reading a new 10 s bucket (mean)', avg(miss)),
          row('round on the same bucket (mean)', avg(hit)),
          row('mean round (what an interval costs)', mean),
        ],
        notes: [
          `A round reads each target's observation from the store (merged histograms, counts over 3 windows), reads its actuator, steps the policy, applies the rails, stores a decision when the policy acts (${decisions} in 8 rounds) and writes the target's status. Target: the mean round well under the ${INTERVAL_MS / 1000} s interval. Load average during the run: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores.`,
        ],
      }
    } finally {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  },
}
export default bench
