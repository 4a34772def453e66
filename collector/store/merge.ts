import { addEncoded, checkHistogram, mergeEncoded } from '../report/histogram.js'
import type { HistogramCheck } from '../report/histogram.js'
import { encodeHistogram, newHistogram } from '../report/index.js'
import type { Histogram } from '../report/index.js'

/** One group of a {@link Merge}: its first histogram kept encoded until a second one comes. */
interface MergeGroup<K> {
  readonly key: K
  readonly first: string
  /** Further rows, merged sparse ({@link mergeEncoded}) when the group is written, while they are few. */
  more: string[] | null
  h: Histogram | null
}

/**
 * Rows a group merges sparse at most; past that, a dense histogram is cheaper. A compaction merges six 10 s rows
 * into a minute, or sixty 1 min rows into an hour per replica.
 */
const SPARSE_MERGE_MAX_ROWS = 64

/** The group's merged histogram, decoding what it holds so far when it first needs a dense one. */
function opened<K>(g: MergeGroup<K>): Histogram {
  if (!g.h) {
    g.h = newHistogram()
    addEncoded(g.h, g.first)
    for (const e of g.more ?? []) addEncoded(g.h, e)
    g.more = null
  }
  return g.h
}

/**
 * Histograms merged per key, encoded on the way out. A key with one histogram keeps its encoding as it came
 * (nothing to decode), as a report's only replica of a service does; a few are merged sparse when written
 * ({@link mergeEncoded}); more, or any checked at ingest, are added bucket by bucket into a dense histogram.
 */
export class Merge<K extends readonly [string | number, string, ...number[]]> {
  readonly #groups = new Map<string, MergeGroup<K>>()
  /** Groups by key object, for a caller that passes the same key object again (ingest: no joined id per histogram). */
  readonly #byKey = new Map<K, MergeGroup<K>>()

  add(key: K, encoded: string): void {
    const id = key.join('\u0000')
    const g = this.#groups.get(id)
    if (!g) {
      this.#groups.set(id, { key, first: encoded, more: null, h: null })
      return
    }
    if (g.h === null && (g.more?.length ?? 0) < SPARSE_MERGE_MAX_ROWS) (g.more ??= []).push(encoded)
    else addEncoded(opened(g), encoded)
  }

  /**
   * Ingest's check of an encoded histogram ({@link checkHistogram}) and {@link add} in one decode. A histogram
   * without counts adds nothing; one that fails its check adds nothing either (the caller refuses the whole
   * report, and this merge with it).
   */
  addChecked(key: K, encoded: string): HistogramCheck {
    let g = this.#byKey.get(key)
    if (!g) {
      const id = key.join('\u0000')
      g = this.#groups.get(id)
      if (!g) {
        const check = checkHistogram(encoded)
        if (check.ok && check.totalCount > 0) {
          const created = { key, first: encoded, more: null, h: null }
          this.#groups.set(id, created)
          this.#byKey.set(key, created)
        }
        return check
      }
      this.#byKey.set(key, g)
    }
    // A few histograms per key (a report carrying a few replicas of a service) are kept encoded and merged sparse
    // when written; a dense histogram pays off only for many (scanning its window to encode cost more).
    if (g.h === null && (g.more?.length ?? 0) < SPARSE_MERGE_MAX_ROWS) {
      const check = checkHistogram(encoded)
      if (check.ok && check.totalCount > 0) (g.more ??= []).push(encoded)
      return check
    }
    return checkHistogram(encoded, opened(g))
  }

  get size(): number {
    return this.#groups.size
  }

  rows(): Array<[K, string]> {
    return [...this.#groups.values()].map((g) => [
      g.key,
      g.h ? encodeHistogram(g.h) : g.more ? mergeEncoded([g.first, ...g.more]) : g.first,
    ])
  }
}
