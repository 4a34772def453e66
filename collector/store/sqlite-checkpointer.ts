import { Worker } from 'node:worker_threads'

/**
 * WAL pages after which the writing connection checkpoints by itself (SQLite's `wal_autocheckpoint`): the fallback
 * for when the checkpoint thread falls behind or is gone. SQLite's default is 1,000 (4 MB), which a report of a few
 * hundred series passes every few commits, and each of those commits then waited for the copy and its fsync.
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 16_384
/** A WAL file left larger than this after a checkpoint is cut back to it (`journal_size_limit`, bytes). */
export const WAL_SIZE_LIMIT_BYTES = 64 << 20
/**
 * Rows written between two checkpoints asked for ({@link SqliteCheckpointer.poke}). A checkpoint per small commit
 * cost more than it saved (its fsync beside every commit: a report of one series took 2.5 instead of 1.6 ms); one
 * per 5,000 rows left so much for the writer's own checkpoint at {@link FALLBACK_AUTOCHECKPOINT_PAGES} that its
 * stalls grew (100-series reports: p99 96–111 ms against 59–70 ms at 1,000 rows and 64–70 ms with SQLite's own
 * checkpoints).
 */
export const CHECKPOINT_EVERY_ROWS = 1_000
/** How often the checkpoint thread checkpoints when nobody pokes it (small writes, the SLO engine, GPUs, signals). */
const IDLE_CHECKPOINT_MS = 1000
/** How long {@link SqliteCheckpointer.stop} lets a checkpoint in progress finish before ending the thread. */
const STOP_GRACE_MS = 10_000

/**
 * The checkpoint thread's code. A string, run with `eval`, so that the same text works from the compiled
 * package and from the TypeScript sources under test; it loads the driver by the absolute path it is given.
 * Each message `'checkpoint'` (and a timer) runs `wal_checkpoint(PASSIVE)`: it copies committed WAL frames into
 * the database file and fsyncs it without blocking the writer or readers. Messages that queue up while one runs
 * are folded into the next. `'stop'` closes the connection and ends the thread.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driverPath)
const db = new Database(workerData.path, { fileMustExist: true })
db.pragma('busy_timeout = 0')
let timer = null
let due = false
let stopped = false
function checkpoint() {
  if (stopped) return
  due = false
  clearTimeout(timer)
  try {
    const r = db.pragma('wal_checkpoint(PASSIVE)')[0]
    parentPort.postMessage({ kind: 'done', log: r.log, checkpointed: r.checkpointed })
  } catch (err) {
    parentPort.postMessage({ kind: 'error', message: err.message })
  }
  timer = setTimeout(checkpoint, workerData.idleMs)
}
parentPort.on('message', (m) => {
  if (m === 'stop') {
    stopped = true
    clearTimeout(timer)
    db.close()
    parentPort.close()
  } else if (!due) {
    due = true
    setImmediate(checkpoint)
  }
})
timer = setTimeout(checkpoint, workerData.idleMs)
`

/** What the checkpoint thread has done, for tests and the store's log. */
export interface CheckpointStats {
  /** Checkpoints run. */
  readonly runs: number
  /** WAL frames in the log at the last checkpoint, and how many of them were in the database file after it. */
  readonly lastLog: number
  readonly lastCheckpointed: number
  readonly errors: number
}

/**
 * Checkpoints a SQLite WAL database from a worker thread, so that copying the WAL into the database file and its
 * fsync happen beside the writer instead of inside one of its commits (100-series reports through the route in
 * process: 25.8–28.7 ms mean with SQLite's own checkpoints, 19.5–21.5 ms with this thread). The writing connection keeps
 * {@link FALLBACK_AUTOCHECKPOINT_PAGES} as its own limit, so the WAL stays bounded if this thread falls behind.
 * Durability is unchanged: a commit is in the WAL before it is acknowledged, whoever copies it later.
 *
 * The thread starts at the first {@link poke}; {@link stop} ends it (the store's close).
 *
 * @example
 * ```ts
 * const cp = new SqliteCheckpointer('/var/lib/tailguard.db', driver.path, (l) => log.warn(l))
 * // after each commit, with the rows it wrote:
 * cp.poke(rows)
 * await cp.stop()
 * ```
 */
export class SqliteCheckpointer {
  readonly #path: string
  readonly #driverPath: string
  readonly #log: (line: string) => void
  #worker: Worker | null = null
  #stopped = false
  #rowsSince = 0
  #runs = 0
  #lastLog = 0
  #lastCheckpointed = 0
  #errors = 0

  constructor(path: string, driverPath: string, log: (line: string) => void) {
    this.#path = path
    this.#driverPath = driverPath
    this.#log = log
  }

  /**
   * Counts `rows` written by a commit and asks for a checkpoint once {@link CHECKPOINT_EVERY_ROWS} have been
   * (starting the thread on first use); smaller writes wait for the thread's timer. Cheap.
   */
  poke(rows: number): void {
    if (this.#stopped) return
    if (this.#worker === null) this.#start()
    this.#rowsSince += rows
    if (this.#rowsSince < CHECKPOINT_EVERY_ROWS) return
    this.#rowsSince = 0
    this.#worker!.postMessage('checkpoint')
  }

  get stats(): CheckpointStats {
    return {
      runs: this.#runs,
      lastLog: this.#lastLog,
      lastCheckpointed: this.#lastCheckpointed,
      errors: this.#errors,
    }
  }

  /** Ends the thread after the checkpoint in progress, if any; its connection is closed before this resolves. */
  async stop(): Promise<void> {
    this.#stopped = true
    const w = this.#worker
    if (w === null) return
    this.#worker = null
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()))
    w.postMessage('stop')
    // A checkpoint of a large WAL takes a moment; one that never ends must not hang the store's close.
    const timer = setTimeout(() => void w.terminate(), STOP_GRACE_MS)
    await exited
    clearTimeout(timer)
  }

  #start(): void {
    const w = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path: this.#path, driverPath: this.#driverPath, idleMs: IDLE_CHECKPOINT_MS },
    })
    w.unref()
    w.on(
      'message',
      (m: { kind: 'done'; log: number; checkpointed: number } | { kind: 'error'; message: string }) => {
        if (m.kind === 'done') {
          this.#runs++
          this.#lastLog = m.log
          this.#lastCheckpointed = m.checkpointed
        } else {
          // SQLITE_BUSY when another connection checkpoints at the same moment; anything else is worth a line.
          this.#errors++
          if (!/busy|locked/i.test(m.message)) this.#log(`store: background checkpoint failed: ${m.message}`)
        }
      },
    )
    w.on('error', (err) => {
      this.#errors++
      this.#log(
        `store: checkpoint thread stopped: ${err.message.split('\n')[0]}; the writer checkpoints by itself`,
      )
      if (this.#worker === w) this.#worker = null
      this.#stopped = true
    })
    this.#worker = w
  }
}
