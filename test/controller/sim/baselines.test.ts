import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  AZURE_TRACE_ATTRIBUTION,
  BASELINE_POLICIES,
  comparePolicies,
  findReplicas,
  formatResultsTable,
  parseAzureTrace,
  peakProvisionedReplicas,
  renderHtmlReport,
  runSimulation,
  staticPolicy,
} from '../../../controller/index.js'
import type { ArrivalSpec, SimConfig, SimResult } from '../../../controller/index.js'
import { shippedTracePath } from '../../../controller/index.js'

function fleet(arrivals: ArrivalSpec, llm: boolean): SimConfig {
  const base: SimConfig = {
    seed: 11,
    arrivals,
    replica: llm
      ? {
          kind: 'llm',
          prefillMsPerToken: 0.1,
          decodeStepMs: 25,
          decodeMsPerSeq: 0.25,
          kvCapacityTokens: 100_000,
          noise: { kind: 'lognormal', cv: 0.1 },
        }
      : { kind: 'batch', service: { fixedMs: 5, perItemMs: 0.6 }, noise: { kind: 'lognormal', cv: 0.1 } },
    initial: { batchWindowMs: llm ? 0 : 10, maxBatch: llm ? 64 : 16, admission: [], desiredReplicas: 1 },
    slo: llm ? { e2eMs: 30_000, ttftMs: 2000 } : { e2eMs: 100 },
    coldStart: { loadMs: 20_000, warmupMs: 10_000 },
    maxReplicas: 64,
  }
  return { ...base, initial: { ...base.initial, desiredReplicas: peakProvisionedReplicas(base) } }
}

function compare(cfg: SimConfig): SimResult[] {
  return comparePolicies(cfg, BASELINE_POLICIES, {
    sloMs: cfg.slo.e2eMs,
    minReplicas: 1,
    maxReplicas: 64,
    maxBatch: cfg.initial.maxBatch,
  })
}

function checkWellFormed(results: SimResult[]): void {
  expect(results.map((r) => r.policy)).toEqual([...BASELINE_POLICIES])
  for (const r of results) {
    expect(r.arrived).toBeGreaterThan(0)
    expect(r.completed + r.shed).toBe(r.arrived)
    expect(r.attainment.overall).toBeGreaterThanOrEqual(0)
    expect(r.attainment.overall).toBeLessThanOrEqual(1)
    expect(r.gpuHours).toBeGreaterThan(0)
  }
  const table = formatResultsTable(results)
  for (const name of BASELINE_POLICIES) expect(table).toContain(`| ${name} `)
}

describe('every baseline on step and diurnal patterns', () => {
  const step = fleet(
    {
      kind: 'step',
      steps: [
        { atMs: 0, rps: 500 },
        { atMs: 200_000, rps: 1500 },
        { atMs: 400_000, rps: 500 },
      ],
      durationMs: 600_000,
    },
    false,
  )
  const results = compare({ ...step, initial: { ...step.initial, desiredReplicas: 1 } })
  it('runs and reports side by side', () => checkWellFormed(results))
  it('autoscalers add replicas when the step comes; static and AIMD never scale', () => {
    const by = Object.fromEntries(results.map((r) => [r.policy, r]))
    for (const p of ['hpa', 'keda', 'kpa']) {
      expect(by[p]!.scalingActions).toBeGreaterThan(0)
      expect(by[p]!.replicas.max).toBeGreaterThan(1)
    }
    expect(by.static!.scalingActions).toBe(0)
    expect(by.aimd!.scalingActions).toBe(0)
  })
  it('diurnal', () => {
    // A slower model (S(B) = 20 + 5·B ms, 160 req/s per replica at B = 16) keeps the run short with several replicas.
    const base = fleet(
      { kind: 'diurnal', meanRps: 300, amplitude: 0.6, periodMs: 1_800_000, durationMs: 1_800_000 },
      false,
    )
    const slow: SimConfig = {
      ...base,
      replica: { kind: 'batch', service: { fixedMs: 20, perItemMs: 5 } },
      slo: { e2eMs: 300 },
    }
    const diurnal = compare({
      ...slow,
      initial: { ...slow.initial, desiredReplicas: peakProvisionedReplicas(slow) },
    })
    checkWellFormed(diurnal)
    // Peak provisioning meets the SLO; HPA follows the cycle (up and down) and still meets it.
    const by = Object.fromEntries(diurnal.map((r) => [r.policy, r]))
    expect(by.static!.attainment.overall).toBeGreaterThan(0.99)
    expect(by.hpa!.replicas.min).toBeLessThan(by.hpa!.replicas.max)
    expect(by.hpa!.attainment.overall).toBeGreaterThan(0.99)
  })
})

const tracePath = shippedTracePath()
describe('every baseline on the Azure conversation trace', () => {
  it('runs and reports side by side, with the attribution in the HTML report', () => {
    const parsed = parseAzureTrace(readFileSync(tracePath, 'utf8'))
    if (!parsed.ok) throw new Error(parsed.error.message)
    const results = compare(fleet({ kind: 'trace', trace: parsed.trace }, true))
    checkWellFormed(results)
    for (const r of results) {
      expect(r.latencyMs.ttft!.count).toBeGreaterThan(0)
      expect(r.attainment.ttft).toBeDefined()
    }
    const html = renderHtmlReport('t', [
      { name: 'azure', description: 'trace', results, attribution: AZURE_TRACE_ATTRIBUTION },
    ])
    expect(html).not.toMatch(/<script|<link|src=/i)
    expect(html).toContain('Splitwise')
    for (const name of BASELINE_POLICIES) expect(html).toContain(`>${name}<`)
  })
})

describe('what-if: fewest replicas for a p99 target', () => {
  it('the answer meets the target and one replica fewer does not', () => {
    const cfg = fleet({ kind: 'poisson', rps: 3000, durationMs: 60_000 }, false)
    const search = findReplicas(cfg, { metric: 'e2e', percentile: 0.99, maxMs: 40 }, 64)
    expect(search.replicas).not.toBeNull()
    const n = search.replicas!
    const p99 = (k: number) =>
      runSimulation(
        { ...cfg, initial: { ...cfg.initial, desiredReplicas: k }, warmPoolMin: k },
        staticPolicy(),
      ).latencyMs.e2e.p99
    expect(p99(n)).toBeLessThanOrEqual(40)
    expect(p99(n - 1)).toBeGreaterThan(40)
    expect(search.probes.some((p) => p.replicas === n && p.meets)).toBe(true)
  })
  it('says so when no count up to the maximum is enough', () => {
    const cfg = fleet({ kind: 'poisson', rps: 3000, durationMs: 10_000 }, false)
    expect(findReplicas(cfg, { metric: 'e2e', percentile: 0.99, maxMs: 1 }, 4).replicas).toBeNull()
  })
})
