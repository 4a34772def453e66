import { mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync } from 'node:fs'
import { open, rename } from 'node:fs/promises'
import { join } from 'node:path'
import type { IntervalReport } from '../../collector/index.js'

/** One report waiting for the collector's acknowledgement. */
export interface SpooledReport {
  readonly key: string
  readonly report: IntervalReport
  /** The report as JSON, as spooled and as sent (encoded once). */
  readonly body: string
  readonly bytes: number
}

/**
 * Reports not yet acknowledged by the collector. The disk spool writes each report to its own file
 * (write to a temp name, fsync, rename) before the first send, so a crash of the agent or an outage of the
 * collector loses nothing that was spooled; the memory spool is for tests and `--spool-dir ''`. The writes and the
 * fsync run off the event loop (a proxy in the same process keeps serving meanwhile); `add` settles, and the
 * report is pending, only once it is durable.
 * Bounded: past `maxBytes` the oldest reports are dropped and counted.
 *
 * @example
 * ```ts
 * const spool = openSpool({ dir: '/var/lib/tailguard/spool', maxBytes: 64 << 20 })
 * await spool.add(report); for (const r of spool.pending()) await send(r.body).then(() => spool.remove(r.key))
 * ```
 */
export interface Spool {
  /** Settles once the report is kept (on disk: written and fsynced), with the count of old reports evicted. */
  add(report: IntervalReport): Promise<{ readonly dropped: number }>
  /** Pending reports, oldest first (by instance start, then seq). */
  pending(): readonly SpooledReport[]
  remove(key: string): void
  readonly bytes: number
  readonly size: number
}

const keyOf = (r: IntervalReport): string =>
  `${String(r.intervalStartMs).padStart(15, '0')}-${r.agent.instance}-${String(r.seq).padStart(12, '0')}`

class MemorySpool implements Spool {
  protected items = new Map<string, SpooledReport>()
  bytes = 0
  constructor(protected readonly maxBytes: number) {}
  get size(): number {
    return this.items.size
  }
  async add(report: IntervalReport): Promise<{ dropped: number }> {
    const body = JSON.stringify(report)
    const item = { key: keyOf(report), report, body, bytes: Buffer.byteLength(body) }
    await this.persist(item)
    this.items.set(item.key, item)
    this.bytes += item.bytes
    return { dropped: this.evict() }
  }
  protected persist(_item: SpooledReport): Promise<void> {
    return Promise.resolve()
  }
  protected unpersist(_key: string): void {}
  pending(): readonly SpooledReport[] {
    return [...this.items.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }
  remove(key: string): void {
    const item = this.items.get(key)
    if (!item) return
    this.items.delete(key)
    this.bytes -= item.bytes
    this.unpersist(key)
  }
  private evict(): number {
    let dropped = 0
    while (this.bytes > this.maxBytes && this.items.size > 1) {
      const oldest = this.pending()[0]!
      this.remove(oldest.key)
      dropped++
    }
    return dropped
  }
}

class DiskSpool extends MemorySpool {
  constructor(
    private readonly dir: string,
    maxBytes: number,
    onCorrupt: (file: string) => void,
  ) {
    super(maxBytes)
    mkdirSync(dir, { recursive: true })
    for (const name of readdirSync(dir)) {
      const file = join(dir, name)
      if (name.endsWith('.tmp')) {
        unlinkSync(file)
        continue
      }
      if (!name.endsWith('.json')) continue
      try {
        const body = readFileSync(file, 'utf8')
        const report = JSON.parse(body) as IntervalReport
        const key = name.slice(0, -'.json'.length)
        const item = { key, report, body, bytes: Buffer.byteLength(body) }
        this.items.set(key, item)
        this.bytes += item.bytes
      } catch {
        onCorrupt(file)
        renameSync(file, file + '.corrupt')
      }
    }
  }
  protected override async persist(item: SpooledReport): Promise<void> {
    const tmp = join(this.dir, item.key + '.tmp')
    const fh = await open(tmp, 'w')
    try {
      await fh.writeFile(item.body)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, join(this.dir, item.key + '.json'))
  }
  protected override unpersist(key: string): void {
    // Synchronous: an unlink is a metadata change, no fsync (a report acknowledged but still on disk after a
    // crash is sent again, and the collector answers `duplicate`).
    try {
      unlinkSync(join(this.dir, key + '.json'))
    } catch {
      // already gone
    }
  }
}

/** Opens the spool in `dir` (reloading what a previous run left), or a memory spool when `dir` is null. */
export function openSpool(opts: {
  dir: string | null
  maxBytes: number
  onCorrupt?: (file: string) => void
}): Spool {
  return opts.dir
    ? new DiskSpool(opts.dir, opts.maxBytes, opts.onCorrupt ?? (() => {}))
    : new MemorySpool(opts.maxBytes)
}
