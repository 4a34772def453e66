import type { SampleSink, Source, SourceStatus } from '../types.js'

/**
 * A {@link Source} whose members come and go while the agent runs (the serving demo's replicas, each with a
 * model server to scrape): a member added before the agent starts the set starts with it, one added later
 * starts at once; `remove` stops it.
 *
 * @example
 * ```ts
 * const set = createSourceSet('demo scrapes')
 * await runAgent(cfg, log, { sources: [set] })
 * set.add('r2', createScrapeSource({ url, kind: 'vllm', replica: 'r2', countRequests: false }, { node }))
 * await set.remove('r2')
 * ```
 */
export interface SourceSet extends Source {
  add(key: string, source: Source): void
  remove(key: string): Promise<void>
  readonly size: number
}

/** Makes an empty {@link SourceSet}. @example const set = createSourceSet('demo scrapes') */
export function createSourceSet(name: string): SourceSet {
  const members = new Map<string, Source>()
  let sink: SampleSink | null = null
  let stopped = false
  const startOne = (s: Source) => {
    if (!sink) return
    void Promise.resolve()
      .then(() => s.start(sink!))
      .catch(() => {})
  }
  return {
    name,
    get size() {
      return members.size
    },
    status(): SourceStatus {
      for (const [key, s] of members) {
        const st = s.status()
        if (st.state !== 'ok') return { state: 'unavailable', reason: `${key}: ${st.reason}` }
      }
      return { state: 'ok' }
    },
    start(to) {
      sink = to
      for (const s of members.values()) startOne(s)
    },
    add(key, source) {
      if (stopped) return
      const had = members.get(key)
      if (had) void had.stop().catch(() => {})
      members.set(key, source)
      startOne(source)
    },
    async remove(key) {
      const s = members.get(key)
      if (!s) return
      members.delete(key)
      await s.stop().catch(() => {})
    },
    async stop() {
      stopped = true
      const all = [...members.values()]
      members.clear()
      await Promise.all(all.map((s) => s.stop().catch(() => {})))
    },
  }
}
