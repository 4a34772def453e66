import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { prepareBody } from './body.js'
import type { PreparedBody } from './body.js'

/** A body sent to an ingest worker (its bytes are moved to the worker, not copied). */
export interface IngestJob {
  readonly id: number
  readonly body: Uint8Array
  readonly nowMs: number
  readonly finestMs: number
}

/** A worker's answer: the prepared body, or the error that escaped {@link prepareBody} (a bug: answered 500). */
export type IngestAnswer =
  { readonly id: number; readonly body: PreparedBody } | { readonly id: number; readonly failed: string }

interface Thread {
  readonly worker: Worker
  readonly startedAt: number
  readonly waiting: Map<number, { resolve: (b: PreparedBody) => void; reject: (e: Error) => void }>
}

/** A worker that dies sooner than this after it started is not started again (it would die again at once). */
const MIN_WORKER_LIFE_MS = 1000
/** How long close() lets the workers finish what they hold. */
const CLOSE_GRACE_MS = 10_000

/** At most this many workers for `auto`: on 16 cores 4 workers beat 8 (docs/scale.md, ingest workers). */
const AUTO_MAX_WORKERS = 4

/**
 * The worker count for `collector.ingestWorkers`: a number is taken as it is; `auto` leaves two cores to the
 * collector's own thread and the database (none below 4 cores, where workers measured no gain) and uses at most
 * {@link AUTO_MAX_WORKERS}.
 *
 * @example resolveIngestWorkers('auto', 16) // 4
 * @example resolveIngestWorkers('auto', 2) // 0
 */
export function resolveIngestWorkers(
  setting: number | 'auto',
  cores: number = availableParallelism(),
): number {
  if (setting !== 'auto') return setting
  return cores < 4 ? 0 : Math.min(AUTO_MAX_WORKERS, cores - 2)
}

/** The compiled worker next to this module; absent when the project runs from TypeScript sources (tests). */
const DEFAULT_WORKER = new URL('./worker.js', import.meta.url)

/**
 * Ingest worker threads: report bodies of at least `minBytes` are parsed, checked and prepared on one of
 * `threads` workers (the least busy), so that the collector's thread only receives bodies and writes rows;
 * smaller bodies are prepared in place (a thread hop costs more than they do). The workers start with the first
 * large body. A worker that dies fails what it held (500) and is replaced, unless it died as it started.
 *
 * @example
 * ```ts
 * const pool = new IngestPool({ threads: 2, minBytes: 256 << 10 })
 * const body = await pool.prepare(buffer, Date.now(), 10_000)
 * ```
 */
export class IngestPool {
  readonly threads: number
  readonly #minBytes: number
  readonly #workerUrl: URL
  readonly #pool: Thread[] = []
  readonly #minLifeMs: number
  #nextId = 1
  #closed = false
  #started = false

  /**
   * `eager`: start the workers now; by default they start with the first body of `minBytes` or more (an idle
   * worker holds ~27 MB, and a fleet of small reports never needs one). `minWorkerLifeMs`: a worker that dies
   * sooner after it started is not replaced (default 1 s).
   */
  constructor(opts: {
    readonly threads: number
    readonly minBytes: number
    readonly workerUrl?: URL
    readonly eager?: boolean
    readonly minWorkerLifeMs?: number
  }) {
    this.#workerUrl = opts.workerUrl ?? DEFAULT_WORKER
    this.#minLifeMs = opts.minWorkerLifeMs ?? MIN_WORKER_LIFE_MS
    // From TypeScript sources there is no compiled worker to start: everything is prepared in place.
    this.threads = existsSync(fileURLToPath(this.#workerUrl)) ? Math.max(0, Math.floor(opts.threads)) : 0
    this.#minBytes = opts.minBytes
    if (opts.eager === true) this.#start()
  }

  /** {@link prepareBody} of `body`, on a worker when it is large enough and one runs; `body` is moved there. */
  prepare(body: Uint8Array, nowMs: number, finestMs: number): Promise<PreparedBody> {
    const inPlace = () => Promise.resolve().then(() => prepareBody(body, nowMs, finestMs))
    if (body.length < this.#minBytes || this.#closed) return inPlace()
    this.#start()
    if (this.#pool.length === 0) return inPlace()
    let thread = this.#pool[0]!
    for (const t of this.#pool) if (t.waiting.size < thread.waiting.size) thread = t
    const id = this.#nextId++
    // Moved, not copied, when the bytes are the whole of their buffer (a large body read off the socket is);
    // else copied into a buffer of their own: a small Buffer is a view of Node's shared pool, which cannot be
    // moved (Node 24 refuses it).
    const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength
    const own = whole ? body : new Uint8Array(body)
    return new Promise<PreparedBody>((resolve, reject) => {
      thread.waiting.set(id, { resolve, reject })
      const job: IngestJob = { id, body: own, nowMs, finestMs }
      thread.worker.postMessage(job, [own.buffer as ArrayBuffer])
    })
  }

  /** Stops the workers; what they hold is answered first (within {@link CLOSE_GRACE_MS}, else it fails). */
  async close(): Promise<void> {
    this.#closed = true
    const until = Date.now() + CLOSE_GRACE_MS
    await Promise.all(
      this.#pool.map(async (t) => {
        while (t.waiting.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5))
        await t.worker.terminate()
      }),
    )
    this.#pool.length = 0
  }

  /** Workers running now (fewer than `threads` once one kept dying as it started). */
  get running(): number {
    return this.#pool.length
  }

  /** Starts the workers, once. */
  #start(): void {
    if (this.#started) return
    this.#started = true
    for (let i = 0; i < this.threads; i++) this.#pool.push(this.#spawn())
  }

  #spawn(): Thread {
    const worker = new Worker(this.#workerUrl)
    const thread: Thread = { worker, startedAt: Date.now(), waiting: new Map() }
    worker.on('message', (a: IngestAnswer) => {
      const w = thread.waiting.get(a.id)
      if (!w) return
      thread.waiting.delete(a.id)
      if ('failed' in a) w.reject(new Error(`ingest worker: ${a.failed}`))
      else w.resolve(a.body)
    })
    worker.on('error', (err) => this.#lost(thread, err))
    worker.on('exit', (code) => this.#lost(thread, new Error(`ingest worker exited (code ${code})`)))
    return thread
  }

  /**
   * A worker died: what it held fails, and another takes its place, unless it died as it started (a worker that
   * cannot load would be restarted for ever): then it is not replaced, and with none left bodies are prepared in
   * place.
   */
  #lost(thread: Thread, err: Error): void {
    for (const w of thread.waiting.values()) w.reject(err)
    thread.waiting.clear()
    const at = this.#pool.indexOf(thread)
    if (at < 0) return
    if (this.#closed || Date.now() - thread.startedAt < this.#minLifeMs) this.#pool.splice(at, 1)
    else this.#pool[at] = this.#spawn()
  }
}
