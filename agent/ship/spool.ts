import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  openSync,
  fsyncSync,
  closeSync,
} from 'node:fs'
import { join } from 'node:path'
import type { IntervalReport } from '../../collector/index.js'

/** One report waiting for the collector's acknowledgement. */
export interface SpooledReport {
  readonly key: string
  readonly report: IntervalReport
  readonly bytes: number
}

/**
 * Reports not yet acknowledged by the collector. The disk spool writes each report to its own file
 * (write to a temp name, fsync, rename) before the first send, so a crash of the agent or an outage of the
 * collector loses nothing that was spooled; the memory spool is for tests and `--spool-dir ''`.
 * Bounded: past `maxBytes` the oldest reports are dropped and counted.
 *
 * @example
 * ```ts
 * const spool = openSpool({ dir: '/var/lib/tailguard/spool', maxBytes: 64 << 20 })
 * spool.add(report); for (const r of spool.pending()) await send(r.report).then(() => spool.remove(r.key))
 * ```
 */
export interface Spool {
  add(report: IntervalReport): { readonly dropped: number }
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
  add(report: IntervalReport): { dropped: number } {
    const body = JSON.stringify(report)
    const item = { key: keyOf(report), report, bytes: Buffer.byteLength(body) }
    this.persist(item, body)
    this.items.set(item.key, item)
    this.bytes += item.bytes
    return { dropped: this.evict() }
  }
  protected persist(_item: SpooledReport, _body: string): void {}
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
        const report = JSON.parse(readFileSync(file, 'utf8')) as IntervalReport
        const key = name.slice(0, -'.json'.length)
        const item = { key, report, bytes: statSync(file).size }
        this.items.set(key, item)
        this.bytes += item.bytes
      } catch {
        onCorrupt(file)
        renameSync(file, file + '.corrupt')
      }
    }
  }
  protected override persist(item: SpooledReport, body: string): void {
    const tmp = join(this.dir, item.key + '.tmp')
    writeFileSync(tmp, body)
    const fd = openSync(tmp, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, join(this.dir, item.key + '.json'))
  }
  protected override unpersist(key: string): void {
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
