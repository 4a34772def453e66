import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { AZURE_TRACE_ATTRIBUTION } from './trace.js'
import { scanTraceFile } from './trace-file.js'
import { POLICIES } from './scenario.js'
import type { PolicyName } from './scenario.js'
import { runSimulation } from './simulator.js'
import type { SimResult } from './simulator.js'
import { buildConfig, PATTERNS, policyRuns, synthetic } from './workload.js'
import type { SimFlags, Workload } from './workload.js'

/**
 * What-if capacity planning through the API (`POST /api/v1/whatif`): the simulator of `tailguard sim`, on a
 * synthetic pattern or an uploaded trace, with bounded work. The same input gives the same numbers as the CLI:
 * the fleet is built by the same code (workload.ts) from the CLI's defaults.
 */

/** Most requests one policy may simulate (a pattern's rate × duration, or a trace's rows). */
export const WHATIF_MAX_REQUESTS = 300_000
/** Largest uploaded trace, bytes of CSV. */
export const WHATIF_MAX_TRACE_BYTES = 4 * 1024 * 1024
/** Longest synthetic pattern, seconds. */
export const WHATIF_MAX_DURATION_S = 6 * 3600
/** A run that takes longer than this is stopped (its worker terminated). */
export const WHATIF_TIMEOUT_MS = 60_000

const PolicySchema = Type.Union(POLICIES.map((p) => Type.Literal(p)))

export const WhatifRequestSchema = Type.Object(
  {
    workload: Type.Union([
      Type.Object(
        {
          kind: Type.Literal('pattern'),
          pattern: Type.Union(
            PATTERNS.map((p) => Type.Literal(p)),
            {
              description:
                'poisson: constant mean rate; step: 3× in the middle third; diurnal: ±60%; mmpp: bursty',
            },
          ),
          rps: Type.Number({
            exclusiveMinimum: 0,
            maximum: 100_000,
            description: 'mean arrival rate, req/s',
          }),
          durationS: Type.Number({ exclusiveMinimum: 0, maximum: WHATIF_MAX_DURATION_S }),
        },
        { additionalProperties: false },
      ),
      Type.Object(
        {
          kind: Type.Literal('trace'),
          csv: Type.String({
            minLength: 1,
            maxLength: WHATIF_MAX_TRACE_BYTES,
            description:
              'Azure LLM trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens), as `tailguard sim --trace`',
          }),
          timeScale: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1000 })),
        },
        { additionalProperties: false },
      ),
    ]),
    policies: Type.Array(PolicySchema, { minItems: 1, maxItems: POLICIES.length, uniqueItems: true }),
    sloP99Ms: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 3_600_000 })),
    objective: Type.Optional(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 })),
    replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
    maxReplicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
    seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 })),
  },
  { additionalProperties: false },
)
export type WhatifRequest = Static<typeof WhatifRequestSchema>

const NullableNumber = Type.Union([Type.Number(), Type.Null()])

export const WhatifAnswerSchema = Type.Object({
  workload: Type.Object({ name: Type.String(), description: Type.String() }),
  attribution: Type.Union([Type.String(), Type.Null()]),
  results: Type.Array(
    Type.Object({
      policy: Type.String(),
      arrived: Type.Integer(),
      attainment: Type.Number({ description: 'share of arrived requests within every objective (0..1)' }),
      sloViolationMinutes: Type.Number(),
      p50Ms: Type.Number(),
      p99Ms: Type.Number(),
      gpuHours: Type.Number(),
      replicaChanges: Type.Integer({ description: 'scaling actions' }),
      shed: Type.Integer(),
      shedRate: Type.Number(),
      replicas: Type.Object({ min: Type.Number(), mean: Type.Number(), max: Type.Number() }),
    }),
  ),
  coincide: Type.Array(Type.Array(Type.String()), {
    description: 'groups of policies whose replica and p99 series are identical (their lines overlap)',
  }),
  timeline: Type.Object({
    minute: Type.Array(Type.Integer()),
    series: Type.Array(
      Type.Object({
        policy: Type.String(),
        replicas: Type.Array(Type.Number()),
        p99Ms: Type.Array(NullableNumber),
      }),
    ),
  }),
  simulatedRequests: Type.Integer(),
  elapsedMs: Type.Number(),
})
export type WhatifAnswer = Static<typeof WhatifAnswerSchema>

/** Bad input the schema cannot see (a trace's content, the work a pattern asks for): 400 naming the field. */
export class WhatifInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`)
  }
}

/** The CLI's defaults (controller/cli/sim.ts), as flags; a test checks the answers equal `tailguard sim`'s. */
const CLI_DEFAULTS: SimFlags = {
  timeScale: '1',
  rps: '2000',
  duration: '3600',
  serviceMs: '5',
  perItemMs: '0.6',
  noise: 'lognormal:0.1',
  prefillMsPerToken: '0.1',
  decodeStepMs: '25',
  decodeMsPerSeq: '0.25',
  kvTokens: '100000',
  kv: 'reserve',
  kvBlockTokens: '16',
  minReplicas: '1',
  maxReplicas: '256',
  coldStartS: '60',
  warmupS: '30',
  classes: '1',
  objective: '0.99',
  policy: 'static',
  seed: '1',
  targetMetric: 'e2e',
  hpaTarget: '0.7',
  kedaQueueTarget: '10',
  progress: false,
  controlIntervalMs: '1000',
}

/** Peak-to-mean of each pattern's arrivals over its duration (step: 1, 3, 1 thirds). */
const MEAN_FACTOR: Record<(typeof PATTERNS)[number], number> = {
  poisson: 1,
  mmpp: 1,
  diurnal: 1,
  step: 5 / 3,
}

/**
 * Checks the work a request asks for before any run: a pattern's expected requests and (for a trace) the CSV,
 * which it writes to a temporary file for the run. Throws {@link WhatifInputError}.
 *
 * @example const plan = planWhatif(body); try { runWhatif(plan) } finally { plan.cleanup() }
 */
export function planWhatif(req: WhatifRequest): { workload: Workload; flags: SimFlags; cleanup(): void } {
  const flags: SimFlags = {
    ...CLI_DEFAULTS,
    policy: req.policies.join(','),
    ...(req.sloP99Ms !== undefined ? { sloP99Ms: String(req.sloP99Ms) } : {}),
    ...(req.objective !== undefined ? { objective: String(req.objective) } : {}),
    ...(req.replicas !== undefined ? { replicas: String(req.replicas) } : {}),
    ...(req.maxReplicas !== undefined ? { maxReplicas: String(req.maxReplicas) } : {}),
    ...(req.seed !== undefined ? { seed: String(req.seed) } : {}),
  }
  const w = req.workload
  if (w.kind === 'pattern') {
    const expected = w.rps * w.durationS * MEAN_FACTOR[w.pattern]
    if (expected > WHATIF_MAX_REQUESTS)
      throw new WhatifInputError(
        'workload.rps',
        `rps × durationS asks for about ${Math.round(expected).toLocaleString('en-US')} requests per policy; the limit is ${WHATIF_MAX_REQUESTS.toLocaleString('en-US')} (lower the rate or the duration)`,
      )
    return { workload: synthetic(w.pattern, w.rps, w.durationS * 1000, undefined), flags, cleanup: () => {} }
  }
  const dir = mkdtempSync(join(tmpdir(), 'tg-whatif-'))
  const cleanup = () => rmSync(dir, { recursive: true, force: true })
  try {
    const path = join(dir, 'trace.csv')
    writeFileSync(path, w.csv)
    const scanned = scanTraceFile(path)
    if (!scanned.ok)
      throw new WhatifInputError('workload.csv', `line ${scanned.error.line}: ${scanned.error.message}`)
    const { stats } = scanned
    if (stats.requests > WHATIF_MAX_REQUESTS)
      throw new WhatifInputError(
        'workload.csv',
        `the trace holds ${stats.requests.toLocaleString('en-US')} requests; the limit is ${WHATIF_MAX_REQUESTS.toLocaleString('en-US')}`,
      )
    const timeScale = w.timeScale ?? 1
    return {
      workload: {
        name: 'trace (uploaded)',
        spec: { kind: 'trace-file', path, stats, timeScale },
        description: `${stats.requests.toLocaleString('en-US')} requests over ${(stats.durationMs / 60_000 / timeScale).toFixed(1)} min (time scale ×${timeScale})`,
        attribution: AZURE_TRACE_ATTRIBUTION,
        llmDefault: true,
      },
      flags: { ...flags, timeScale: String(timeScale) },
      cleanup,
    }
  } catch (err) {
    cleanup()
    throw err
  }
}

/**
 * Runs every policy of a planned what-if on the calling thread (the route runs it in a worker thread) and
 * answers the comparison table and per-minute series.
 *
 * @example const answer = runWhatif(planWhatif(body), body.policies)
 */
export function runWhatif(
  plan: { workload: Workload; flags: SimFlags },
  policies: readonly PolicyName[],
): WhatifAnswer {
  const started = performance.now()
  const { config } = buildConfig(plan.workload, plan.flags)
  const results = policyRuns(config, policies, plan.flags, {}, []).map((r) => runSimulation(config, r.make()))
  return {
    workload: { name: plan.workload.name, description: plan.workload.description },
    attribution: plan.workload.attribution ?? null,
    results: results.map((r) => ({
      policy: r.policy,
      arrived: r.arrived,
      attainment: r.attainment.overall,
      sloViolationMinutes: r.sloViolationMinutes,
      p50Ms: r.latencyMs.e2e.p50,
      p99Ms: r.latencyMs.e2e.p99,
      gpuHours: r.gpuHours,
      replicaChanges: r.scalingActions,
      shed: r.shed,
      shedRate: r.arrived > 0 ? r.shed / r.arrived : 0,
      replicas: { ...r.replicas },
    })),
    coincide: coinciding(results),
    timeline: {
      minute: longest(results),
      series: results.map((r) => ({
        policy: r.policy,
        replicas: [...r.timeline.replicas],
        p99Ms: [...r.timeline.p99Ms],
      })),
    },
    simulatedRequests: results.reduce((n, r) => n + r.arrived, 0),
    elapsedMs: performance.now() - started,
  }
}

function longest(results: readonly SimResult[]): number[] {
  let best: readonly number[] = []
  for (const r of results) if (r.timeline.minute.length > best.length) best = r.timeline.minute
  return [...best]
}

const sameSeries = (a: readonly (number | null)[], b: readonly (number | null)[]) =>
  a.length === b.length && a.every((v, i) => v === b[i])

/**
 * Groups of policies (two or more) whose replica and p99 series are identical: their chart lines lie on top of
 * each other, so the page names them ("aimd = static") rather than hiding one.
 *
 * @example coinciding(results) // [['static', 'aimd']]
 */
export function coinciding(results: readonly SimResult[]): string[][] {
  const groups: SimResult[][] = []
  for (const r of results) {
    const g = groups.find(
      (g) =>
        sameSeries(g[0]!.timeline.replicas, r.timeline.replicas) &&
        sameSeries(g[0]!.timeline.p99Ms, r.timeline.p99Ms),
    )
    if (g) g.push(r)
    else groups.push([r])
  }
  return groups.filter((g) => g.length > 1).map((g) => g.map((r) => r.policy))
}
