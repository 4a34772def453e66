import type { SeriesLabels } from '../../../../collector/index.js'
import type { Metric } from '../../../../collector/index.js'
import type { RequestSample, SampleSink } from '../../../../agent/index.js'

export { prng, normal, latencySampleUs, nearestRank } from '../../../helpers/samples.js'

export interface Captured {
  readonly requests: RequestSample[]
  readonly latencies: { labels: SeriesLabels; metric: Metric; durationUs: number }[]
  readonly dropped: Record<string, number>
}

/** A SampleSink that keeps everything it is given, for asserting on mapping results. */
export function capturingSink(): SampleSink & Captured {
  const requests: RequestSample[] = []
  const latencies: Captured['latencies'] = []
  const dropped: Record<string, number> = {}
  return {
    requests,
    latencies,
    dropped,
    recordRequest: (s) => void requests.push(s),
    recordLatency: (labels, metric, durationUs) => void latencies.push({ labels, metric, durationUs }),
    drop: (reason, n = 1) => void (dropped[reason] = (dropped[reason] ?? 0) + n),
  }
}
