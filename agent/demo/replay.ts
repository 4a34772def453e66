import type { Phase } from '../../collector/index.js'
import { createInferenceSdk } from '../sdk/inference-sdk.js'
import type { RequestSample, SampleSink } from '../types.js'
import { createDemoFleet } from './fleet.js'
import type { DemoArrival } from './fleet.js'

export interface DemoReplayOptions {
  /** Arrivals of the LLM service, sorted by offset; replayed in a loop. */
  readonly arrivals: readonly DemoArrival[]
  /** How many times faster than real time to replay. */
  readonly speed: number
  /** Vision requests per second of trace time. */
  readonly visionRatePerSecond?: number
  readonly emit: (sample: RequestSample) => void
  readonly seed?: number
  readonly node?: string
  readonly tickMs?: number
  readonly clock?: () => number
}

/**
 * Replays the demo workload in real time (compressed by `speed`), emitting each finished request.
 * Returns a stop function.
 *
 * @example
 * ```ts
 * const stop = startDemoReplay({ arrivals, speed: 10, emit: (s) => recorder.recordRequest(s) })
 * ```
 */
export function startDemoReplay(opts: DemoReplayOptions): { stop(): void; readonly emitted: () => number } {
  const clock = opts.clock ?? Date.now
  const fleet = createDemoFleet({ seed: opts.seed ?? 42, node: opts.node ?? 'demo-node' })
  const arrivals = opts.arrivals
  const loopMs = arrivals.length > 0 ? arrivals[arrivals.length - 1]!.offsetMs + 1000 : 60_000
  const visionRate = opts.visionRatePerSecond ?? 40
  const started = clock()
  let idx = 0
  let loop = 0
  let visionDue = 0
  let emitted = 0
  const tick = () => {
    const traceNow = (clock() - started) * opts.speed
    // LLM arrivals up to now, looping over the trace.
    for (;;) {
      if (arrivals.length === 0) break
      const a = arrivals[idx]!
      const offset = a.offsetMs + loop * loopMs
      if (offset > traceNow) break
      opts.emit(fleet.chat({ ...a, offsetMs: offset }))
      emitted++
      idx++
      if (idx === arrivals.length) {
        idx = 0
        loop++
      }
    }
    // Vision arrivals at a steady rate of trace time.
    const visionTarget = Math.floor((traceNow / 1000) * visionRate)
    for (; visionDue < visionTarget; visionDue++) {
      opts.emit(fleet.vision())
      emitted++
    }
  }
  const timer = setInterval(tick, opts.tickMs ?? 200)
  timer.unref()
  return {
    stop: () => clearInterval(timer),
    emitted: () => emitted,
  }
}

/** The order a request goes through its phases (the demo's requests take them one after another). */
const PHASE_ORDER: readonly Phase[] = [
  'routing',
  'network',
  'serialization',
  'queue',
  'retrieval',
  'preprocess',
  'h2d',
  'kernel',
  'd2h',
  'prefill',
  'decode',
  'postprocess',
]

/**
 * Turns demo samples into calls of the in-process SDK, as an instrumented model server makes them: a request
 * is started, each phase starts and ends, the first token is marked after prefill, and the request ends with
 * its status. The SDK runs on a virtual clock advanced by each phase's duration, so the recorded times are
 * the model's, and the SDK path (not a shortcut into the recorder) is what the demo exercises.
 *
 * @example const emit = createSdkEmitter(agent.recorder); startDemoReplay({ arrivals, speed: 10, emit })
 */
export function createSdkEmitter(sink: SampleSink): (sample: RequestSample) => void {
  let nowMs = 0
  const sdk = createInferenceSdk({
    sink,
    labels: { service: 'demo', model: '', version: '', replica: '', node: '' },
    clock: () => nowMs,
    timeOriginMs: Date.now(),
  })
  return (s) => {
    const req = sdk.startRequest(s.labels)
    for (const phase of PHASE_ORDER) {
      const us = s.phasesUs[phase]
      if (us === undefined) continue
      req.startPhase(phase)
      nowMs += us / 1000
      req.endPhase(phase)
      if (phase === 'prefill') req.firstToken()
    }
    req.end({
      status: s.status,
      ...(s.errorClass !== undefined ? { errorClass: s.errorClass } : {}),
      ...(s.outputTokens !== undefined ? { outputTokens: s.outputTokens } : {}),
    })
  }
}
