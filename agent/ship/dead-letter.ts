import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'

/** One report (or series) the collector refused as bad, or the agent found unsendable, with why. */
export interface DeadLetter {
  /** When it was refused, epoch ms. */
  readonly atMs: number
  /** The collector's HTTP status (400, 413, 422), or 0 when the agent refused it before sending. */
  readonly status: number
  readonly reason: string
  /** The refused report, or `{ series }` for series the agent set aside from an otherwise good report. */
  readonly payload: unknown
}

/**
 * Where refused reports go instead of blocking the spool: one JSON file per refusal in `dir` (by default
 * `<spoolDir>/dead-letter`), written atomically, `{ atMs, status, reason, payload }`. Bounded: past
 * `maxFiles` the oldest are deleted. A refused report's file can be inspected, fixed and re-sent with curl;
 * `entries()` is for tests and tools.
 *
 * @example
 * ```ts
 * const dl = openDeadLetter({ dir: '/var/lib/tailguard/spool/dead-letter', maxFiles: 1000 })
 * dl.add({ atMs: Date.now(), status: 400, reason: 'body/seq: Expected integer', payload: report })
 * ```
 */
export interface DeadLetterBox {
  add(letter: DeadLetter): void
  /** Letters added since the box was opened (memory) or found in the folder (disk), oldest first. */
  entries(): readonly DeadLetter[]
  readonly count: number
}

class MemoryDeadLetter implements DeadLetterBox {
  protected letters: DeadLetter[] = []
  constructor(protected readonly maxFiles: number) {}
  get count(): number {
    return this.letters.length
  }
  add(letter: DeadLetter): void {
    this.letters.push(letter)
    while (this.letters.length > this.maxFiles) this.letters.shift()
  }
  entries(): readonly DeadLetter[] {
    return this.letters
  }
}

class DiskDeadLetter extends MemoryDeadLetter {
  #n = 0
  constructor(
    private readonly dir: string,
    maxFiles: number,
  ) {
    super(maxFiles)
    mkdirSync(dir, { recursive: true })
  }
  override get count(): number {
    return this.#files().length
  }
  #files(): string[] {
    return readdirSync(this.dir)
      .filter((n) => n.endsWith('.json'))
      .sort()
  }
  override add(letter: DeadLetter): void {
    const name = `${String(letter.atMs).padStart(15, '0')}-${process.pid}-${String(this.#n++).padStart(6, '0')}`
    const tmp = join(this.dir, name + '.tmp')
    writeFileSync(tmp, JSON.stringify(letter))
    const fd = openSync(tmp, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, join(this.dir, name + '.json'))
    const files = this.#files()
    for (const f of files.slice(0, Math.max(0, files.length - this.maxFiles))) {
      try {
        unlinkSync(join(this.dir, f))
      } catch {
        // already gone
      }
    }
    super.add(letter)
  }
}

/**
 * Opens the dead-letter box in `dir`, or a memory box when `dir` is null.
 *
 * @example const dl = openDeadLetter({ dir: null, maxFiles: 100 })
 */
export function openDeadLetter(opts: { dir: string | null; maxFiles: number }): DeadLetterBox {
  return opts.dir ? new DiskDeadLetter(opts.dir, opts.maxFiles) : new MemoryDeadLetter(opts.maxFiles)
}
