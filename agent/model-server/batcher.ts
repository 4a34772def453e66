import type { Mlp } from './mlp.js'

/** The batching setpoints (contract 3: `GET|PUT /v1/batching`). */
export interface BatchingSettings {
  /** How long the first queued item waits for others before a partial batch runs. */
  readonly windowMs: number
  /** Largest batch one forward pass takes. */
  readonly maxBatch: number
}

/** Cumulative batcher statistics (Triton-style: counts and nanoseconds). */
export interface BatcherStats {
  items: number
  batches: number
  queueNs: number
  computeNs: number
  /** Executions and compute time per batch size. */
  readonly bySize: Map<number, { count: number; ns: number }>
  lastBatchSize: number
}

/**
 * A dynamic batcher: items (one input row each) wait until `maxBatch` are queued or the first has waited
 * `windowMs`, then run through the model in one forward pass. Settings change at runtime and apply from the
 * next batch.
 *
 * @example
 * ```ts
 * const b = createBatcher(model, { windowMs: 5, maxBatch: 16 })
 * b.submit(row, (logits, offset) => …)
 * b.set({ maxBatch: 32 })
 * ```
 */
export interface Batcher {
  submit(input: Float32Array, done: (logits: Float32Array, row: number) => void): void
  readonly settings: BatchingSettings
  set(next: Partial<BatchingSettings>): BatchingSettings
  /** Items waiting for a batch. */
  readonly queued: number
  readonly stats: BatcherStats
  close(): void
}

interface Item {
  readonly input: Float32Array
  readonly done: (logits: Float32Array, row: number) => void
  readonly at: number
}

/**
 * Makes a {@link Batcher} over a model.
 *
 * @example const batcher = createBatcher(createMlp({ hidden: 1024, layers: 2, seed: 1 }), { windowMs: 5, maxBatch: 16 })
 */
export function createBatcher(model: Mlp, initial: BatchingSettings): Batcher {
  let settings = { ...initial }
  const h = model.shape.hidden
  let queue: Item[] = []
  let timer: NodeJS.Timeout | null = null
  let scheduled = false
  let closed = false
  const stats: BatcherStats = {
    items: 0,
    batches: 0,
    queueNs: 0,
    computeNs: 0,
    bySize: new Map(),
    lastBatchSize: 0,
  }

  function schedule(): void {
    if (closed || scheduled || queue.length === 0) return
    const waited = performance.now() - queue[0]!.at
    if (queue.length >= settings.maxBatch || waited >= settings.windowMs) {
      scheduled = true
      // Let I/O in between batches (new arrivals join the next batch, responses go out).
      setImmediate(run)
      return
    }
    if (timer === null)
      timer = setTimeout(
        () => {
          timer = null
          schedule()
        },
        Math.max(0, settings.windowMs - waited),
      )
  }

  function run(): void {
    scheduled = false
    if (timer !== null) {
      clearTimeout(timer)
      timer = null
    }
    if (closed || queue.length === 0) return
    const n = Math.min(settings.maxBatch, queue.length)
    const items = queue.slice(0, n)
    queue = queue.slice(n)
    const x = new Float32Array(n * h)
    const t0 = performance.now()
    for (let i = 0; i < n; i++) {
      x.set(items[i]!.input.subarray(0, h), i * h)
      stats.queueNs += Math.round((t0 - items[i]!.at) * 1e6)
    }
    const logits = model.forward(x, n)
    const ns = Math.round((performance.now() - t0) * 1e6)
    stats.items += n
    stats.batches++
    stats.computeNs += ns
    stats.lastBatchSize = n
    const s = stats.bySize.get(n) ?? { count: 0, ns: 0 }
    s.count++
    s.ns += ns
    stats.bySize.set(n, s)
    for (let i = 0; i < n; i++) items[i]!.done(logits, i)
    schedule()
  }

  return {
    submit(input, done) {
      if (closed) return
      queue.push({ input, done, at: performance.now() })
      schedule()
    },
    get settings() {
      return settings
    },
    set(next) {
      settings = { ...settings, ...next }
      if (timer !== null) {
        clearTimeout(timer)
        timer = null
      }
      schedule()
      return settings
    },
    get queued() {
      return queue.length
    },
    stats,
    close() {
      closed = true
      if (timer !== null) clearTimeout(timer)
      queue = []
    },
  }
}
