import { newHistogram, encodeHistogram, seriesKey, toRecordableUs, isMetric } from '../collector/index.js'
import type { Histogram, Metric, ReportSeries, SeriesLabels } from '../collector/index.js'
import type { DurationUs, RequestSample, SampleSink } from './types.js'

interface SeriesState {
  readonly labels: SeriesLabels
  readonly histograms: Map<Metric, Histogram>
  ok: number
  error: number
  shed: number
  outputTokens: number
  errorClasses: Map<string, number>
}

/** A bound series: records into one label set without looking it up again (the hot path). */
export interface SeriesHandle {
  record(metric: Metric, durationUs: DurationUs): void
}

/** What {@link Recorder.drain} hands the shipper: the interval's series and refusals. */
export interface DrainedInterval {
  readonly series: ReportSeries[]
  readonly dropped: Record<string, number>
}

/**
 * Folds observations into one HDR histogram per (labels, metric) and counts requests, until drained.
 * Recording a value is a map lookup and an array increment: no allocation, no I/O, no throw.
 *
 * @example
 * ```ts
 * const rec = createRecorder()
 * rec.series(labels).record('kernel', 4200)
 * const { series } = rec.drain() // ready for an interval report
 * ```
 */
export interface Recorder extends SampleSink {
  series(labels: SeriesLabels): SeriesHandle
  drain(): DrainedInterval
  /** Total requests recorded since the recorder was made (for the agent's own metrics). */
  readonly recordedRequests: number
}

class RecorderImpl implements Recorder {
  #series = new Map<string, SeriesState>()
  #dropped = new Map<string, number>()
  recordedRequests = 0

  #state(labels: SeriesLabels): SeriesState {
    const key = seriesKey(labels)
    let s = this.#series.get(key)
    if (!s) {
      s = {
        labels: {
          service: labels.service,
          model: labels.model,
          version: labels.version,
          replica: labels.replica,
          node: labels.node,
        },
        histograms: new Map(),
        ok: 0,
        error: 0,
        shed: 0,
        outputTokens: 0,
        errorClasses: new Map(),
      }
      this.#series.set(key, s)
    }
    return s
  }

  #record(s: SeriesState, metric: Metric, durationUs: DurationUs): void {
    const v = toRecordableUs(durationUs)
    if (v === undefined) {
      this.drop('negative_duration')
      return
    }
    let h = s.histograms.get(metric)
    if (!h) {
      h = newHistogram()
      s.histograms.set(metric, h)
    }
    h.recordValue(v)
  }

  series(labels: SeriesLabels): SeriesHandle {
    // The handle re-resolves its state after a drain, so it stays valid across intervals.
    const key = seriesKey(labels)
    return {
      record: (metric, durationUs) => {
        const s = this.#series.get(key) ?? this.#state(labels)
        this.#record(s, metric, durationUs)
      },
    }
  }

  recordLatency(labels: SeriesLabels, metric: Metric, durationUs: DurationUs): void {
    if (!isMetric(metric)) {
      this.drop('unknown_phase')
      return
    }
    this.#record(this.#state(labels), metric, durationUs)
  }

  recordRequest(sample: RequestSample): void {
    const s = this.#state(sample.labels)
    for (const [phase, us] of Object.entries(sample.phasesUs)) {
      if (us === undefined) continue
      if (!isMetric(phase)) {
        this.drop('unknown_phase')
        continue
      }
      this.#record(s, phase, us)
    }
    if (sample.ttftUs !== undefined) this.#record(s, 'ttft', sample.ttftUs)
    if (sample.tpotUs !== undefined) this.#record(s, 'tpot', sample.tpotUs)
    s[sample.status]++
    if (sample.status !== 'ok' && sample.errorClass)
      s.errorClasses.set(sample.errorClass, (s.errorClasses.get(sample.errorClass) ?? 0) + 1)
    if (sample.outputTokens !== undefined && sample.outputTokens >= 0)
      s.outputTokens += Math.round(sample.outputTokens)
    this.recordedRequests++
  }

  drop(reason: string, n = 1): void {
    this.#dropped.set(reason, (this.#dropped.get(reason) ?? 0) + n)
  }

  drain(): DrainedInterval {
    const current = this.#series
    const dropped = Object.fromEntries(this.#dropped)
    this.#series = new Map()
    this.#dropped = new Map()
    const series: ReportSeries[] = []
    for (const s of current.values()) {
      const histograms: Partial<Record<Metric, string>> = {}
      for (const [metric, h] of s.histograms) if (h.totalCount > 0) histograms[metric] = encodeHistogram(h)
      series.push({
        labels: s.labels,
        histograms,
        requests: { ok: s.ok, error: s.error, shed: s.shed },
        ...(s.errorClasses.size > 0
          ? { errorClasses: Object.fromEntries([...s.errorClasses].slice(0, 64)) }
          : {}),
        ...(s.outputTokens > 0 ? { outputTokens: s.outputTokens } : {}),
      })
    }
    return { series, dropped }
  }
}

/** Makes an empty {@link Recorder}. */
export function createRecorder(): Recorder {
  return new RecorderImpl()
}
