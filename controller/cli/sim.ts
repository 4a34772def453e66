import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Option } from 'commander'
import { AZURE_TRACE_ATTRIBUTION, MAX_TRACE_SPAN_MS, shippedTracePath } from '../sim/trace.js'
import { scanTraceFile } from '../sim/trace-file.js'
import { findReplicas, POLICIES, TAILGUARD_PARTS } from '../sim/scenario.js'
import type { PolicyName, ReplicaTarget } from '../sim/scenario.js'
import { tailguardOptionsFromConfig } from '../policies/tailguard/options.js'
import type { TailguardOptions } from '../policies/tailguard/index.js'
import { formatResultsTable, renderHtmlReport } from '../sim/report.js'
import type { Scenario } from '../sim/report.js'
import { runSimulation } from '../sim/simulator.js'
import type { SimConfig, SimResult } from '../sim/simulator.js'
import { buildConfig, num, PATTERNS, policyRuns, synthetic } from '../sim/workload.js'
import type { Pattern, SimFlags, Workload } from '../sim/workload.js'
import { CliError, loadConfig } from '../../collector/index.js'
import type { CliIO, RegisterCommand } from '../../collector/index.js'

function loadTrace(path: string, timeScale: number): Workload {
  // Streamed: a first pass validates and measures the file, each run reads it again (constant memory).
  let scanned: ReturnType<typeof scanTraceFile>
  try {
    scanned = scanTraceFile(path)
  } catch (err) {
    throw new CliError(
      `--trace ${path}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    )
  }
  if (!scanned.ok) throw new CliError(`--trace ${path}:${scanned.error.line}: ${scanned.error.message}`)
  const stats = scanned.stats
  const n = stats.requests
  return {
    name: `trace ${path.split(/[\\/]/).pop()}`,
    spec: { kind: 'trace-file', path, stats, timeScale },
    description: `${n.toLocaleString('en-US')} requests over ${(stats.durationMs / 60_000 / timeScale).toFixed(1)} min (time scale ×${timeScale})`,
    attribution: AZURE_TRACE_ATTRIBUTION,
    llmDefault: true,
  }
}

function parsePolicies(raw: string): PolicyName[] {
  if (raw === 'all') return [...POLICIES]
  const names = raw.split(',').map((s) => s.trim())
  for (const n of names)
    if (!(POLICIES as readonly string[]).includes(n))
      throw new CliError(`--policy: unknown policy "${n}" (expected ${POLICIES.join('|')}|all)`)
  return names as PolicyName[]
}

type TailguardPart = (typeof TAILGUARD_PARTS)[number]

function parseParts(flag: string, raw: string | undefined): TailguardPart[] {
  if (raw === undefined || raw.trim() === '') return []
  const parts = raw.split(',').map((s) => s.trim())
  for (const p of parts)
    if (!(TAILGUARD_PARTS as readonly string[]).includes(p))
      throw new CliError(`${flag}: unknown part "${p}" (expected ${TAILGUARD_PARTS.join('|')})`)
  return parts as TailguardPart[]
}

/** tailguard's options from the config file's `policy.tailguard` section (seconds become ms). */
function tailguardFromFile(path: string | undefined): TailguardOptions {
  return path === undefined ? {} : tailguardOptionsFromConfig(loadConfig(path, {}).policy.tailguard)
}

/** tailguard's options from its flags (the rest comes from the simulated fleet: SLO, cold start, bounds). */
function tailguardFlags(f: SimFlags): TailguardOptions {
  const opt = (flag: string, raw: string | undefined, o: Parameters<typeof num>[2]) =>
    raw !== undefined ? num(flag, raw, o) : undefined
  const seconds = (flag: string, raw: string | undefined) => {
    const v = opt(flag, raw, { min: 0 })
    return v !== undefined ? v * 1000 : undefined
  }
  const share = opt('--tg-queue-share', f.tgQueueShare, { gt: 0 })
  if (share !== undefined && share > 1)
    throw new CliError(`--tg-queue-share: expected a share in (0, 1], got "${f.tgQueueShare}"`)
  const o: Record<string, unknown> = {
    headroom: opt('--tg-headroom', f.tgHeadroom, { min: 0 }),
    coldStartMs: seconds('--tg-cold-start-s', f.tgColdStartS),
    nPlusOne: f.tgNPlusOne === true ? true : undefined,
    scaleDownAfterMs: seconds('--tg-scale-down-after-s', f.tgScaleDownAfterS),
    scaleDownStepMs: seconds('--tg-scale-down-step-s', f.tgScaleDownStepS),
    queueShare: share,
    outputTailFactor: opt('--tg-output-tail', f.tgOutputTail, { gt: 0 }),
  }
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as TailguardOptions
}

function progressBar(io: CliIO, enabled: boolean): { update(label: string, f: number): void; done(): void } {
  let last = -1
  return {
    update(label, f) {
      if (!enabled) return
      const pctNow = Math.floor(f * 100)
      if (pctNow === last) return
      last = pctNow
      const width = 30
      const fill = Math.round(f * width)
      io.errRaw(
        `\r${label.padEnd(24).slice(0, 24)} [${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ${String(pctNow).padStart(3)}%`,
      )
    },
    done() {
      if (!enabled) return
      io.errRaw('\r' + ' '.repeat(64) + '\r')
      last = -1
    },
  }
}

/**
 * `tailguard sim`: replays a trace or a seeded synthetic pattern through the fleet simulator under one or more
 * baseline policies, and prints a comparison table, JSON, or a self-contained HTML report; `--find-replicas`
 * searches the smallest replica count that meets the p99 target (what-if capacity planning).
 *
 * @example tailguard sim --trace controller/sim/traces/azure-llm-2023-conv.csv --policy all --report sim.html
 */
export const registerSim: RegisterCommand = (program, io) => {
  program
    .command('sim')
    .description(
      'Simulate an inference fleet (discrete events) under baseline autoscaling/batching policies, driven by a trace or a synthetic pattern',
    )
    .option(
      '--trace <path>',
      'replay an Azure LLM trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens); default, with no --pattern: the shipped controller/sim/traces/azure-llm-2023-conv.csv',
    )
    .option('--pattern <list>', `synthetic arrivals, comma-separated: ${PATTERNS.join(', ')}`)
    .option('--time-scale <x>', 'trace time compression: 2 replays twice as fast (twice the rate)', '1')
    .option(
      '--rps <n>',
      'mean arrival rate of synthetic patterns, req/s (step: base rate, 3× in the middle third)',
      '2000',
    )
    .option('--duration <s>', 'length of synthetic patterns, seconds', '3600')
    .option('--requests <n>', 'stop synthetic patterns after this many requests')
    .addOption(
      new Option(
        '--model <kind>',
        'replica model: batch (dynamic batcher) or llm (continuous batching); default llm for --trace, batch for --pattern',
      ).choices(['batch', 'llm']),
    )
    .option('--service-ms <ms>', 'batch model: fixed cost a of a batch, S(B) = a + b·B', '5')
    .option('--per-item-ms <ms>', 'batch model: cost b per request in a batch', '0.6')
    .option('--noise <kind>', 'service-time noise: none, exponential, lognormal:CV', 'lognormal:0.1')
    .option('--prefill-ms-per-token <ms>', 'llm model: prefill cost per prompt token', '0.1')
    .option('--decode-step-ms <ms>', 'llm model: fixed cost of one decode step', '25')
    .option(
      '--decode-ms-per-seq <ms>',
      'llm model: added cost per running sequence per step (per output token)',
      '0.25',
    )
    .option(
      '--kv-tokens <n>',
      'llm model: KV-cache capacity per replica, tokens (input + output reserved per sequence)',
      '100000',
    )
    .addOption(
      new Option(
        '--kv <model>',
        'llm model: KV cache reserved up front (prompt + output per sequence) or paged (blocks as tokens are written, preemption when full)',
      )
        .choices(['reserve', 'paged'])
        .default('reserve'),
    )
    .option('--kv-block-tokens <n>', 'llm model, paged KV: tokens per block', '16')
    .option(
      '--window-ms <ms>',
      'batching window: max wait of the oldest request for a batch to fill (default 10; llm 0)',
    )
    .option('--max-batch <n>', 'max batch size (llm: max running sequences) (default 16; llm 64)')
    .option(
      '--replicas <n>',
      'initial replicas and the static fleet size (default: peak-provisioned at 70% utilization)',
    )
    .option('--min-replicas <n>', 'warm-pool minimum: never fewer replicas than this', '1')
    .option('--max-replicas <n>', 'autoscalers never go above this', '256')
    .option('--cold-start-s <s>', 'model load time of a new replica, seconds (billed)', '60')
    .option('--warmup-s <s>', 'warm-up after load before a replica is ready, seconds (billed)', '30')
    .option('--classes <shares>', 'priority classes as relative shares, highest first (e.g. 0.2,0.8)', '1')
    .option('--deadline-ms <ms>', 'deadline-aware dropping: shed requests that cannot finish within this')
    .option('--max-queue <n>', 'admission: max queued requests per class')
    .option('--max-concurrency <n>', 'admission: max requests in the system per class')
    .option('--slo-p99-ms <ms>', 'end-to-end latency objective (default 100; llm 30000)')
    .option('--slo-ttft-ms <ms>', 'llm: time-to-first-token objective')
    .option('--slo-tpot-ms <ms>', 'llm: time-per-output-token objective')
    .option(
      '--objective <share>',
      'share of requests that must meet the objectives (violation minutes, error budget)',
      '0.99',
    )
    .option(
      '--policy <list>',
      `policies to compare, comma-separated: ${POLICIES.join(', ')}, or all`,
      'static',
    )
    .option('--control-interval-ms <ms>', 'how often policies step (the observation interval)', '1000')
    .option(
      '--observe-missing <share>',
      'robustness: share of observations missing (the policy sees no data)',
    )
    .option('--observe-stale-s <s>', 'robustness: observations reach the policy this many seconds late')
    .addOption(
      new Option(
        '--observe <what>',
        'what policies see: full (spans or a scraped server: service time, batch sizes, busy share) or proxy (only what the proxy in front of servers that report nothing measures)',
      )
        .choices(['full', 'proxy'])
        .default('full'),
    )
    .option(
      '-c, --config <file>',
      'YAML config file: its policy.tailguard section sets tailguard options (flags override it)',
    )
    .option(
      '--tg-headroom <share>',
      'tailguard: load headroom before sizing (default 0.15; widened while the error budget burns)',
    )
    .option(
      '--tg-cold-start-s <s>',
      'tailguard: cold start it assumes, seconds (default: the simulated load + warm-up)',
    )
    .option('--tg-n-plus-one', 'tailguard: keep enough replicas to survive losing one (survival check)')
    .option(
      '--tg-scale-down-after-s <s>',
      'tailguard: never below the highest need of this look-back window (default 120)',
    )
    .option(
      '--tg-scale-down-step-s <s>',
      'tailguard: at most one replica down per this many seconds (default 30)',
    )
    .option(
      '--tg-queue-share <share>',
      'tailguard: share of the latency objective the queue and batching window may use (default 0.5)',
    )
    .option(
      '--tg-output-tail <x>',
      'tailguard, llm: a tail request generates x times the mean output tokens (default 3)',
    )
    .option('--tg-off <parts>', `tailguard: turn parts off, comma-separated: ${TAILGUARD_PARTS.join(', ')}`)
    .option('--tg-ablation', 'also run tailguard with each part turned off in turn (an ablation table)')
    .option('--seed <n>', 'random seed (same seed, same result)', '1')
    .option('--json', 'print results as JSON instead of a table')
    .option(
      '--report <file>',
      'write a self-contained HTML report (inline SVG charts) comparing the policies',
    )
    .option(
      '--find-replicas',
      'what-if: search the fewest static replicas that meet p99 ≤ --slo-p99-ms (or the --target-metric objective)',
    )
    .addOption(
      new Option('--target-metric <m>', 'metric for --find-replicas')
        .choices(['e2e', 'ttft', 'tpot'])
        .default('e2e'),
    )
    .option('--hpa-target <share>', 'HPA target GPU utilization', '0.7')
    .option('--keda-queue-target <n>', 'KEDA queue depth per replica', '10')
    .option('--kpa-concurrency <n>', 'KPA per-replica concurrency (default: max batch)')
    .option('--gpu-hour-usd <usd>', 'price of a GPU-hour, to report cost per million requests')
    .option('--no-progress', 'no progress bar (it is drawn on stderr only when stderr is a terminal)')
    .addHelpText(
      'after',
      `
Examples:
  tailguard sim --trace controller/sim/traces/azure-llm-2023-conv.csv --policy all --report sim.html
  tailguard sim --pattern step,diurnal --rps 2000 --duration 1800 --policy all --json
  tailguard sim --trace trace.csv --find-replicas --target-metric ttft --slo-ttft-ms 2000

Outputs: SLO attainment (share of requests within every objective; shed requests count as misses),
SLO-violation minutes (minutes whose attainment fell below --objective), p50/p99/p99.9, goodput (req/s
within the objectives), GPU-hours (starting and idle replicas included), shed rate by class, scaling actions.`,
    )
    .action((flags: SimFlags) => runSim(flags, io))
}

function runSim(f: SimFlags, io: CliIO): void {
  const timeScale = num('--time-scale', f.timeScale, { gt: 0 })
  const workloads: Workload[] = []
  if (f.trace !== undefined) workloads.push(loadTrace(f.trace, timeScale))
  if (f.pattern !== undefined) {
    const rps = num('--rps', f.rps, { gt: 0 })
    const durationMs = num('--duration', f.duration, { gt: 0, max: MAX_TRACE_SPAN_MS / 1000 }) * 1000
    const maxRequests =
      f.requests !== undefined ? num('--requests', f.requests, { min: 1, integer: true }) : undefined
    for (const p of f.pattern.split(',').map((s) => s.trim())) {
      if (!(PATTERNS as readonly string[]).includes(p))
        throw new CliError(`--pattern: unknown pattern "${p}" (expected ${PATTERNS.join('|')})`)
      workloads.push(synthetic(p as Pattern, rps, durationMs, maxRequests))
    }
  }
  // No workload named: the Azure conversation trace the package ships (a missing file is an error, not a fallback).
  if (workloads.length === 0) workloads.push(loadTrace(shippedTracePath(), timeScale))
  const policies = parsePolicies(f.policy)
  const bar = progressBar(io, f.progress && io.isTTY && f.json !== true)
  const usd = f.gpuHourUsd !== undefined ? num('--gpu-hour-usd', f.gpuHourUsd, { min: 0 }) : undefined

  if (f.findReplicas) {
    const out = workloads.map((w) => {
      const { config, llm } = buildConfig(w, f)
      const metric = f.targetMetric as ReplicaTarget['metric']
      if (metric !== 'e2e' && !llm) throw new CliError(`--target-metric ${metric}: needs --model llm`)
      const maxMs =
        metric === 'ttft'
          ? num('--slo-ttft-ms', f.sloTtftMs ?? String(config.slo.e2eMs), { gt: 0 })
          : metric === 'tpot'
            ? num('--slo-tpot-ms', f.sloTpotMs ?? String(config.slo.e2eMs), { gt: 0 })
            : config.slo.e2eMs
      const target: ReplicaTarget = { metric, percentile: 0.99, maxMs, maxShedRate: 0 }
      const search = findReplicas(config, target, config.maxReplicas ?? 256, (p) =>
        bar.update(`${w.name} n=${p.replicas}`, 1),
      )
      bar.done()
      return { workload: w, target, search }
    })
    if (f.json) {
      io.out(
        JSON.stringify(
          out.map((o) => ({
            workload: o.workload.name,
            description: o.workload.description,
            attribution: o.workload.attribution,
            target: o.target,
            replicas: o.search.replicas,
            probes: o.search.probes,
            result: o.search.best ? stripTimeline(o.search.best) : null,
          })),
          null,
          2,
        ),
      )
    } else {
      for (const o of out) {
        io.out(`${o.workload.name}: ${o.workload.description}`)
        for (const p of o.search.probes)
          io.out(
            `  ${String(p.replicas).padStart(4)} replicas: ${o.target.metric} p99 ${formatProbeMs(p.valueMs, o.target.maxMs)}, shed ${(p.shedRate * 100).toFixed(2)}%, ${p.gpuHours.toFixed(2)} GPU-h ${p.meets ? '✓' : '✗'}`,
          )
        io.out(
          o.search.replicas === null
            ? `  no replica count up to --max-replicas meets ${o.target.metric} p99 ≤ ${o.target.maxMs} ms`
            : `  → ${o.search.replicas} replicas for ${o.target.metric} p99 ≤ ${o.target.maxMs} ms`,
        )
        if (o.workload.attribution) io.out(`  data: ${o.workload.attribution}`)
      }
    }
    if (f.report !== undefined) {
      const scenarios: Scenario[] = out
        .filter((o) => o.search.best)
        .map((o) => ({
          name: `${o.workload.name}: ${o.search.replicas} replicas`,
          description: `${o.workload.description}; fewest static replicas with ${o.target.metric} p99 ≤ ${o.target.maxMs} ms`,
          results: [o.search.best!],
          ...(o.workload.attribution ? { attribution: o.workload.attribution } : {}),
        }))
      writeReport(f.report, scenarios, io)
    }
    return
  }

  const scenarios: Scenario[] = workloads.map((w) => {
    const { config } = buildConfig(w, f)
    const file = tailguardFromFile(f.config)
    const flags = tailguardFlags(f)
    // Flags override the file.
    const tg: TailguardOptions = { ...file, ...flags }
    const off = parseParts('--tg-off', f.tgOff)
    const runs = policyRuns(config, policies, f, tg, off, f.tgAblation === true)
    const results: SimResult[] = runs.map(({ label, make }) => {
      const r = runSimulation(config, make(), { onProgress: (x) => bar.update(`${w.name} ${label}`, x) })
      bar.done()
      return r
    })
    return {
      name: w.name,
      description: `${w.description}; ${describeFleet(config)}`,
      results,
      ...(w.attribution ? { attribution: w.attribution } : {}),
    }
  })
  if (f.json) {
    io.out(
      JSON.stringify(
        scenarios.map((s) => ({
          ...s,
          results: s.results.map((r) => ({
            ...r,
            ...(usd !== undefined ? { usdPerMillion: cost(r, usd) } : {}),
          })),
        })),
        null,
        2,
      ),
    )
  } else {
    for (const s of scenarios) {
      io.out(`${s.name}: ${s.description}`)
      io.out(formatResultsTable(s.results))
      if (usd !== undefined)
        for (const r of s.results)
          io.out(`  ${r.policy}: $${cost(r, usd).toFixed(2)} per million requests at $${usd}/GPU-hour`)
      if (s.attribution) io.out(`data: ${s.attribution}`)
      io.out('')
    }
  }
  if (f.report !== undefined) writeReport(f.report, scenarios, io)
}

function cost(r: SimResult, usd: number): number {
  return r.arrived > 0 ? ((r.gpuHours * usd) / r.arrived) * 1e6 : 0
}

function stripTimeline(r: SimResult): Omit<SimResult, 'timeline' | 'decisions'> {
  const { timeline: _t, decisions: _d, ...rest } = r
  return rest
}

function describeFleet(c: SimConfig): string {
  const m = c.replica
  const model =
    m.kind === 'batch'
      ? `batcher S(B) = ${m.service.fixedMs} + ${m.service.perItemMs}·B ms, window ${c.initial.batchWindowMs} ms, max batch ${c.initial.maxBatch}`
      : `continuous batching (prefill ${m.prefillMsPerToken} ms/token, step ${m.decodeStepMs} + ${m.decodeMsPerSeq}·seqs ms, KV ${m.kvCapacityTokens} tokens ${m.kv?.kind === 'paged' ? `paged in ${m.kv.blockTokens}-token blocks` : 'reserved up front'}, max ${c.initial.maxBatch} seqs)`
  const slo = [`e2e ≤ ${c.slo.e2eMs} ms`]
  if (c.slo.ttftMs !== undefined) slo.push(`TTFT ≤ ${c.slo.ttftMs} ms`)
  if (c.slo.tpotMs !== undefined) slo.push(`TPOT ≤ ${c.slo.tpotMs} ms`)
  return `${model}; ${c.initial.desiredReplicas} replicas at start; SLO ${slo.join(', ')} for ${((c.slo.objective ?? 0.99) * 100).toFixed(1)}%; seed ${c.seed}`
}

function writeReport(path: string, scenarios: readonly Scenario[], io: CliIO): void {
  try {
    writeFileSync(path, renderHtmlReport('tailguard sim: policy comparison', scenarios))
  } catch (err) {
    throw new CliError(
      `--report ${path}: cannot write the file (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    )
  }
  // On stderr, so that --json on stdout stays one parseable document.
  io.err(`report written to ${resolve(path)}`)
}

/**
 * A probe's latency for `--find-replicas`: ms, s or min as fits (the simulator's histograms stop at 1 h), and
 * `saturated` past 10× the target, where the queue grows for the whole run rather than settling.
 */
function formatProbeMs(valueMs: number, targetMs: number): string {
  const text =
    valueMs < 1000
      ? `${valueMs.toFixed(1)} ms`
      : valueMs < 120_000
        ? `${(valueMs / 1000).toFixed(1)} s`
        : valueMs < 3_600_000
          ? `${(valueMs / 60_000).toFixed(0)} min`
          : '> 1 h'
  return valueMs > 10 * targetMs ? `${text} (saturated)` : text
}
