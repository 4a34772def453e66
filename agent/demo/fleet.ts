import type { RequestSample } from '../types.js'
import type { SeriesLabels } from '../../collector/index.js'

/** One arrival of the LLM workload: when (ms since the trace start) and its token counts. */
export interface DemoArrival {
  readonly offsetMs: number
  readonly contextTokens: number
  readonly generatedTokens: number
}

/** A small seeded PRNG (mulberry32), so a demo run is reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A lognormal draw with the given median and shape (sigma of the underlying normal). */
function lognormal(rand: () => number, median: number, sigma: number): number {
  const u = Math.max(rand(), 1e-12)
  const v = rand()
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
  return median * Math.exp(sigma * z)
}

/**
 * The demo fleet: an LLM chat service on three replicas with continuous-batching slots (requests queue
 * when every slot of every replica is busy), and a vision classifier with the classic phases. Each arrival
 * becomes one finished {@link RequestSample} whose phase times follow from the model, so the dashboard
 * shows real queueing when the trace bursts. Times are computed on the trace's own clock: speeding the
 * replay up changes how fast data appears, not the load the fleet sees.
 *
 * @example
 * ```ts
 * const fleet = createDemoFleet({ seed: 1, node: 'demo-node' })
 * for (const s of fleet.chat({ offsetMs: 0, contextTokens: 400, generatedTokens: 60 })) sink.recordRequest(s)
 * ```
 */
export function createDemoFleet(opts: {
  seed: number
  node: string
  chatReplicas?: number
  slotsPerReplica?: number
}) {
  const rand = seededRandom(opts.seed)
  const replicas = opts.chatReplicas ?? 3
  const slots = opts.slotsPerReplica ?? 16
  // Busy-until time (trace ms) of every slot, per replica.
  const busy: Float64Array[] = Array.from({ length: replicas }, () => new Float64Array(slots))
  const chatLabels: SeriesLabels[] = Array.from({ length: replicas }, (_, i) => ({
    service: 'demo-chat',
    model: 'llama-3.1-8b-instruct',
    version: '2024-07',
    replica: `demo-chat-${i}`,
    node: `${opts.node}-${i % 2}`,
  }))
  const visionLabels: SeriesLabels[] = [0, 1].map((i) => ({
    service: 'demo-vision',
    model: 'resnet50',
    version: '1',
    replica: `demo-vision-${i}`,
    node: `${opts.node}-${i}`,
  }))
  const maxQueueMs = 20_000

  return {
    /** Serves one LLM arrival; returns the finished request. */
    chat(a: DemoArrival): RequestSample {
      // Pick the slot that frees first across replicas (least-loaded routing).
      let bestR = 0
      let bestS = 0
      let bestT = Infinity
      for (let r = 0; r < replicas; r++) {
        const b = busy[r]!
        for (let s = 0; s < slots; s++)
          if (b[s]! < bestT) {
            bestT = b[s]!
            bestR = r
            bestS = s
          }
      }
      const labels = chatLabels[bestR]!
      const networkMs = lognormal(rand, 0.8, 0.4)
      const serializationMs = 0.05 + a.contextTokens * 0.0004
      const queueMs = Math.max(0, bestT - a.offsetMs)
      if (queueMs > maxQueueMs) {
        return {
          labels,
          status: 'shed',
          errorClass: 'queue_full',
          phasesUs: { network: networkMs * 1000, total: (networkMs + 1) * 1000 },
        }
      }
      const preprocessMs = 0.3 + a.contextTokens * 0.002
      const prefillMs = lognormal(rand, 12 + a.contextTokens * 0.09, 0.15)
      const tpotMs = lognormal(rand, 22, 0.12) * (1 + 0.02 * busySlots(busy[bestR]!, a.offsetMs))
      const tokens = Math.max(1, a.generatedTokens)
      const decodeMs = tpotMs * (tokens - 1)
      const postprocessMs = 0.2 + tokens * 0.003
      const start = a.offsetMs + queueMs
      busy[bestR]![bestS] = start + preprocessMs + prefillMs + decodeMs + postprocessMs
      const failed = rand() < 0.002
      const totalMs =
        networkMs + serializationMs + queueMs + preprocessMs + prefillMs + decodeMs + postprocessMs
      return {
        labels,
        status: failed ? 'error' : 'ok',
        ...(failed ? { errorClass: rand() < 0.5 ? 'timeout' : 'cuda_oom' } : {}),
        phasesUs: {
          network: networkMs * 1000,
          serialization: serializationMs * 1000,
          queue: queueMs * 1000,
          preprocess: preprocessMs * 1000,
          prefill: prefillMs * 1000,
          decode: decodeMs * 1000,
          postprocess: postprocessMs * 1000,
          total: totalMs * 1000,
        },
        ttftUs: (networkMs + serializationMs + queueMs + preprocessMs + prefillMs) * 1000,
        tpotUs: tpotMs * 1000,
        outputTokens: tokens,
      }
    },
    /** Serves one vision request (Triton-style phases). */
    vision(): RequestSample {
      const labels = visionLabels[rand() < 0.5 ? 0 : 1]!
      const p = {
        network: lognormal(rand, 0.6, 0.3),
        serialization: lognormal(rand, 0.25, 0.2),
        queue: rand() < 0.7 ? lognormal(rand, 0.4, 0.8) : lognormal(rand, 3, 0.6),
        preprocess: lognormal(rand, 1.8, 0.2),
        h2d: lognormal(rand, 0.35, 0.15),
        kernel: rand() < 0.01 ? lognormal(rand, 40, 0.3) : lognormal(rand, 4.2, 0.1),
        d2h: lognormal(rand, 0.08, 0.2),
        postprocess: lognormal(rand, 0.5, 0.2),
      }
      const total = Object.values(p).reduce((s, v) => s + v, 0)
      const failed = rand() < 0.001
      return {
        labels,
        status: failed ? 'error' : 'ok',
        ...(failed ? { errorClass: 'http_500' } : {}),
        phasesUs: Object.fromEntries([
          ...Object.entries(p).map(([k, v]) => [k, v * 1000]),
          ['total', total * 1000],
        ]),
      }
    },
    /** A synthetic LLM arrival stream (Poisson, lognormal token counts) for when no trace file is at hand. */
    syntheticArrivals(ratePerSecond: number, durationMs: number): DemoArrival[] {
      const out: DemoArrival[] = []
      let t = 0
      while (t < durationMs) {
        t += (-Math.log(Math.max(rand(), 1e-12)) / ratePerSecond) * 1000
        out.push({
          offsetMs: t,
          contextTokens: Math.round(lognormal(rand, 900, 0.9)),
          generatedTokens: Math.max(1, Math.round(lognormal(rand, 180, 0.8))),
        })
      }
      return out
    },
  }
}

/** How many of a replica's slots are busy at `t` (decode slows a little as the batch grows). */
function busySlots(slots: Float64Array, t: number): number {
  let n = 0
  for (let i = 0; i < slots.length; i++) if (slots[i]! > t) n++
  return n
}

export type DemoFleet = ReturnType<typeof createDemoFleet>
