import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import type { HrTime, Tracer } from '@opentelemetry/api'
import { api, eventually, spawnCli } from './cli.js'
import type { CliProcess } from './cli.js'
import { freePort } from './ports.js'
import { latencySampleUs, nearestRank, prng } from './samples.js'

/** Epoch ms as an OpenTelemetry HrTime. @example span.end(hr(Date.now())) */
export const hr = (ms: number): HrTime => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)]

/** The quantiles the OTLP end-to-end tests check. */
export const PIPELINE_QUANTILES = [0.5, 0.9, 0.99, 0.999]

/**
 * Processes and folders of one end-to-end test file, cleaned up by `close()` (call it in `afterAll`).
 *
 * @example const e2e = pipelineFixture(); afterAll(() => e2e.close())
 */
export function pipelineFixture() {
  const procs: CliProcess[] = []
  const dirs: string[] = []
  return {
    /** Starts `tailguard collector` on a fresh SQLite file; resolves with its base URL once it listens. */
    async collector(tokens: { api: string; agent: string }): Promise<string> {
      const dir = mkdtempSync(join(tmpdir(), 'tg-otel-'))
      dirs.push(dir)
      const port = await freePort()
      const collector = spawnCli(
        ['collector', '--port', String(port), '--db', join(dir, 'tg.db'), '--log-level', 'warn'],
        { TAILGUARD_API_TOKEN: tokens.api, TAILGUARD_AGENT_TOKEN: tokens.agent },
      )
      procs.push(collector)
      await collector.waitFor(/listening on http/)
      return `http://127.0.0.1:${port}`
    },
    /** Starts `tailguard agent` with `args` (after `agent`), reporting every 300 ms, NVML off. */
    agent(args: readonly string[], env: Record<string, string>): CliProcess {
      const agent = spawnCli(
        ['agent', ...args, '--interval-ms', '300', '--no-nvml', '--log-level', 'warn'],
        env,
      )
      procs.push(agent)
      return agent
    },
    async close(): Promise<void> {
      for (const p of procs) await p.kill('SIGTERM')
      for (const d of dirs) rmSync(d, { recursive: true, force: true })
    },
  }
}

/**
 * Waits until the collector counts `count` requests for every phase of `service`: the agent ships phases in
 * whatever reports their spans landed in, so one complete phase says nothing about the others.
 *
 * @example await waitForCounts(base, API, 'chat', ['queue', 'total'], 15_000)
 */
export async function waitForCounts(
  base: string,
  token: string,
  service: string,
  phases: readonly string[],
  count: number,
  timeoutMs = 60_000,
): Promise<void> {
  await eventually(async () => {
    for (const phase of phases) {
      const r = await api<{ count: number }>(
        base,
        `/api/v1/latency?service=${service}&phase=${phase}&from=-1h`,
        token,
      )
      if (r.body.count !== count) return false
    }
    return true
  }, timeoutMs)
}

/**
 * Asserts that the collector's percentiles for `query` are within 0.5% of the exact nearest-rank
 * percentiles of `samples` (µs), and that it counted exactly `samples.length` requests.
 *
 * @example await expectPercentiles(base, API, 'service=chat&phase=queue', samplesUs)
 */
export async function expectPercentiles(
  base: string,
  token: string,
  query: string,
  samples: readonly number[],
): Promise<void> {
  const sorted = Float64Array.from(samples).sort()
  const r = await api<{ count: number; quantiles: Record<string, number> }>(
    base,
    `/api/v1/latency?${query}&from=-1h&quantiles=${PIPELINE_QUANTILES.join(',')}`,
    token,
  )
  expect(r.status).toBe(200)
  expect(r.body.count).toBe(samples.length)
  for (const q of PIPELINE_QUANTILES) {
    const exactMs = nearestRank(sorted, q) / 1000
    const got = r.body.quantiles[String(q)]!
    expect(
      Math.abs(got - exactMs) / exactMs,
      `${query} p${q * 100}: ${got} ms vs exact ${exactMs} ms`,
    ).toBeLessThanOrEqual(0.005)
  }
}

/**
 * Starts and ends `perPhase` spans per phase (attribute `tailguard.phase`, model `m1`), each with a known
 * duration drawn from a seeded lognormal around the phase's median; returns the durations in µs by phase.
 *
 * @example const durations = emitPhaseSpans(tracer, [{ phase: 'queue', medianUs: 2000 }], 1000, 1)
 */
export function emitPhaseSpans(
  tracer: Tracer,
  phases: ReadonlyArray<{ readonly phase: string; readonly medianUs: number }>,
  perPhase: number,
  seed: number,
): Record<string, number[]> {
  const rand = prng(seed)
  const durations: Record<string, number[]> = {}
  const t0 = Date.now()
  for (const { phase, medianUs } of phases) {
    const list: number[] = []
    for (let i = 0; i < perPhase; i++) {
      const us = latencySampleUs(rand, medianUs)
      list.push(us)
      const start = t0 + i / 10
      const span = tracer.startSpan(phase, {
        startTime: hr(start),
        attributes: { 'tailguard.phase': phase, 'gen_ai.request.model': 'm1' },
      })
      span.end(hr(start + us / 1000))
    }
    durations[phase] = list
  }
  return durations
}
