import { parentPort, workerData } from 'node:worker_threads'

/**
 * The ingest bench's agents, on a thread of their own so that their HTTP client does not share the collector's
 * event loop (a real fleet's agents run elsewhere). Each agent posts its reports one after another, as an agent
 * does (the next after the previous one's answer), until the budget is spent; the agents run at once.
 */
export interface AgentsJob {
  readonly url: string
  readonly token: string
  /** Per agent, its report body cut at the markers: the seq, the interval's start and its end. */
  readonly parts: readonly (readonly string[])[]
  readonly markers: readonly [seq: string, start: string, end: string]
  /** The interval of report `seq` starts at `baseMs + seq × 5000`. */
  readonly baseMs: number
  readonly seriesPerReport: number
  /** How long the agents send (ms), each at least `minReports` reports, after seq 1 of every agent (untimed: the first sight of every series). */
  readonly budgetMs: number
  readonly minReports: number
}

/** What the agents did: reports and series sent, the wall time, and the time one agent's requests took. */
export interface AgentsResult {
  readonly reports: number
  readonly series: number
  readonly wallMs: number
  readonly requestMs: number
}

async function run(job: AgentsJob): Promise<AgentsResult> {
  const body = (a: number, seq: number): string => {
    const start = job.baseMs + seq * 5000
    const [mSeq, mStart, mEnd] = job.markers
    return job.parts[a]!.map((p) =>
      p === mSeq ? String(seq) : p === mStart ? String(start) : p === mEnd ? String(start + 5000) : p,
    ).join('')
  }
  const post = async (text: string): Promise<void> => {
    const res = await fetch(job.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${job.token}`, 'content-type': 'application/json' },
      body: text,
    })
    if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
  await Promise.all(job.parts.map((_, a) => post(body(a, 1))))
  let reports = 0
  let requestMs = 0
  const t0 = performance.now()
  await Promise.all(
    job.parts.map(async (_, a) => {
      for (let seq = 2; performance.now() - t0 < job.budgetMs || seq < job.minReports + 2; seq++) {
        const text = body(a, seq) // outside the timed part: that is the agent's work
        const t1 = performance.now()
        await post(text)
        requestMs += performance.now() - t1
        reports++
      }
    }),
  )
  return { reports, series: reports * job.seriesPerReport, wallMs: performance.now() - t0, requestMs }
}

if (parentPort !== null && workerData !== null)
  run(workerData as AgentsJob).then(
    (r) => parentPort!.postMessage({ ok: true, result: r }),
    (err: unknown) => parentPort!.postMessage({ ok: false, error: (err as Error).message }),
  )
