import type { Transaction } from 'kysely'
import { floorTo } from './levels.js'
import type { DB } from './schema.js'

/** The append-only tables that are rolled up level by level with the `consumed` rule. */
export type RollupTable =
  | 'tg_hist'
  | 'tg_hist_service'
  | 'tg_count'
  | 'tg_count_service'
  | 'tg_gpu_stat'
  | 'tg_signal'
  | 'tg_bucket_hist'
  | 'tg_pack'

/**
 * Claims the finer level's unconsumed rows of `[fromMs, toMs)` in `table` (`UPDATE … SET consumed = 1 WHERE
 * consumed = 0 … RETURNING`: a concurrent compactor blocks on them and then skips them), and groups them by
 * coarse bucket and the key `keyOf` gives. The caller merges each group into one coarser row in the same
 * transaction.
 *
 * @example
 * ```ts
 * const groups = await claimGroups(trx, 'tg_signal', ['series_id', 'name', …], 10_000, 60_000, from, to, (r) => `${r.series_id}/${r.name}`)
 * ```
 */
export async function claimGroups<T extends RollupTable, C extends keyof DB[T] & string>(
  trx: Transaction<DB>,
  table: T,
  columns: readonly C[],
  fine: number,
  coarse: number,
  fromMs: number,
  toMs: number,
  keyOf: (row: Pick<DB[T], C>) => string,
): Promise<Array<{ readonly bucketMs: number; readonly rows: Array<Pick<DB[T], C>> }>> {
  // kysely cannot check a column list against a table chosen at run time; the generic signature does.
  const claimed = (await trx
    .updateTable(table as 'tg_count')
    .set({ consumed: 1 })
    .where('step_ms', '=', fine)
    .where('consumed', '=', 0)
    .where('bucket_ms', '>=', fromMs)
    .where('bucket_ms', '<', toMs)
    .returning([...columns, 'bucket_ms'] as never)
    .execute()) as unknown as Array<Pick<DB[T], C> & { bucket_ms: number }>
  const groups = new Map<string, { bucketMs: number; rows: Array<Pick<DB[T], C>> }>()
  for (const r of claimed) {
    const bucketMs = floorTo(Number(r.bucket_ms), coarse)
    const key = `${keyOf(r)}\u0000${bucketMs}`
    let g = groups.get(key)
    if (!g) groups.set(key, (g = { bucketMs, rows: [] }))
    g.rows.push(r)
  }
  return [...groups.values()]
}
