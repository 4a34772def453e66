import protobuf from 'protobufjs/minimal.js'
import type { SeriesLabels } from '../../../../collector/index.js'
import type { Metric } from '../../../../collector/index.js'
import type { RequestSample, SampleSink } from '../../../../agent/index.js'

import { attrs, request, span } from './payloads.js'

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

/** google.rpc.Status or ExportTracePartialSuccess-like message: field 1 (varint) and field 2 (string). */
export function decodeTwoFields(buf: Uint8Array): { one?: number; two?: string } {
  const r = protobuf.Reader.create(buf)
  const out: { one?: number; two?: string } = {}
  while (r.pos < r.len) {
    const tag = r.uint32()
    if (tag >>> 3 === 1 && (tag & 7) === 0) out.one = Number(r.int64())
    else if (tag >>> 3 === 2 && (tag & 7) === 2) out.two = r.string()
    else r.skipType(tag & 7)
  }
  return out
}

/** The partial_success of an ExportTraceServiceResponse in protobuf, if any. */
export function decodePartialSuccess(buf: Uint8Array): { one?: number; two?: string } | undefined {
  const r = protobuf.Reader.create(buf)
  while (r.pos < r.len) {
    const tag = r.uint32()
    if (tag >>> 3 === 1 && (tag & 7) === 2) return decodeTwoFields(r.bytes())
    r.skipType(tag & 7)
  }
  return undefined
}

/** Two spans the default mapping records (queue by name, kernel by attribute). */
export const good = request({ 'service.name': 'chat' }, [
  span({ name: 'queue', durationNs: 2_000_000 }),
  span({ name: 'x', attributes: attrs({ 'tailguard.phase': 'kernel' }) }),
])
/** Three spans of which the mapping refuses two (an unknown name, a negative duration). */
export const partly = request({ 'service.name': 'chat' }, [
  span({ name: 'queue' }),
  span({ name: 'GET /healthz' }),
  span({ name: 'decode', durationNs: -1 }),
])
