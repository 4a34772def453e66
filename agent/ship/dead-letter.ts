import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
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
 * `maxFiles` the oldest are deleted. `tailguard dead-letter list|replay` reads the folder ({@link readDeadLetters})
 * and sends refused reports again once the cause is fixed; `entries()` is for tests and tools.
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
    return letterFiles(this.dir)
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

/** One file of a dead-letter folder as {@link readDeadLetters} finds it. */
export type DeadLetterFile =
  | { readonly file: string; readonly letter: DeadLetter }
  | { readonly file: string; readonly letter: null; readonly problem: string }

/** The letter files of a folder (written atomically as `<time>-<pid>-<n>.json`), oldest first. */
function letterFiles(dir: string, names: readonly string[] = readdirSync(dir)): string[] {
  return names.filter((n) => n.endsWith('.json')).sort()
}

/**
 * The letters in a dead-letter folder, oldest first, each with its file name; a file that is not a letter
 * (unreadable, not JSON, wrong shape) comes back with `letter: null` and what is wrong, never throws.
 * An absent folder reads as empty.
 *
 * @example for (const f of readDeadLetters('./.tailguard/spool/dead-letter')) console.log(f.file, f.letter?.reason)
 */
export function readDeadLetters(dir: string): DeadLetterFile[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  return letterFiles(dir, names).map((file): DeadLetterFile => {
    let parsed: unknown
    try {
      parsed = JSON.parse(readFileSync(join(dir, file), 'utf8'))
    } catch (err) {
      return { file, letter: null, problem: `not readable as JSON (${(err as Error).message})` }
    }
    const l = parsed as Partial<DeadLetter> | null
    if (
      l === null ||
      typeof l !== 'object' ||
      typeof l.atMs !== 'number' ||
      typeof l.status !== 'number' ||
      typeof l.reason !== 'string' ||
      typeof l.payload !== 'object' ||
      l.payload === null
    )
      return { file, letter: null, problem: 'not a dead letter (needs atMs, status, reason, payload)' }
    return { file, letter: l as DeadLetter }
  })
}

/**
 * Deletes one letter's file (after it was delivered). A file already gone is not an error.
 *
 * @example removeDeadLetter(dir, '000001763750000000-4242-000000.json')
 */
export function removeDeadLetter(dir: string, file: string): void {
  try {
    unlinkSync(join(dir, file))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
}
