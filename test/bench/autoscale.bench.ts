// Issue #16 acceptance: KEDA GetMetrics latency p99 ≤ 2 ms with 1,000 targets. Real gRPC over loopback with a
// client built from the shipped proto file; the baseline is the same call with a single target, so the ratio
// shows what 1,000 targets cost beyond the gRPC round trip itself.
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { createRecommendationBoard, EXTERNAL_SCALER_PROTO, startKedaScaler } from '../../controller/index.js'
import type { Recommendation } from '../../controller/index.js'
import type { Bench } from './table.js'

const TOKEN = 'bench-token-0123456789'
const CALLS = 4000

function rec(i: number): Recommendation {
  return {
    ref: { service: `svc-${i}`, model: `model-${i % 7}` },
    desiredReplicas: 1 + (i % 40),
    currentReplicas: 1 + (i % 37),
    reason: 'bench',
    decisionId: `d-${i}`,
    mode: 'enforce',
    decidedAtMs: Date.now(),
    validUntilMs: Date.now() + 15_000,
    conditions: [],
    signals: { queueDepth: i % 13, concurrency: i % 29, burnRate: 0.4, arrivalRps: 100 + i },
    scaleToZeroSafe: false,
  }
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!

async function measure(
  targets: number,
  concurrency: number,
): Promise<{ p50: number; p99: number; perSec: number }> {
  const board = createRecommendationBoard()
  for (let i = 0; i < targets; i++) board.publish(rec(i))
  const scaler = await startKedaScaler({ source: board, tokens: [TOKEN], host: '127.0.0.1', port: 0 })
  const def = protoLoader.loadSync(EXTERNAL_SCALER_PROTO(), { keepCase: true, longs: Number, defaults: true })
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    externalscaler: { ExternalScaler: new (addr: string, creds: grpc.ChannelCredentials) => grpc.Client }
  }
  const client = new pkg.externalscaler.ExternalScaler(
    `127.0.0.1:${scaler.port}`,
    grpc.credentials.createInsecure(),
  ) as grpc.Client & {
    GetMetrics(req: unknown, cb: (err: grpc.ServiceError | null, res: unknown) => void): void
  }
  const one = (i: number) =>
    new Promise<number>((ok, fail) => {
      const t = i % targets
      const req = {
        scaledObjectRef: {
          name: 'so',
          namespace: 'ns',
          scalerMetadata: { service: `svc-${t}`, model: `model-${t % 7}`, authToken: TOKEN },
        },
        metricName: 's0-tailguard',
      }
      const t0 = process.hrtime.bigint()
      client.GetMetrics(req, (err) => (err ? fail(err) : ok(Number(process.hrtime.bigint() - t0) / 1e6)))
    })
  for (let i = 0; i < 200; i++) await one(i) // warm-up
  const lat: number[] = []
  const t0 = performance.now()
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < CALLS) lat.push(await one(next++))
    }),
  )
  const seconds = (performance.now() - t0) / 1000
  client.close()
  await scaler.close()
  lat.sort((a, b) => a - b)
  return { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), perSec: CALLS / seconds }
}

const bench: Bench = {
  name: 'autoscale',
  async run(log) {
    const rows: Array<Array<string | number>> = []
    for (const concurrency of [1, 8]) {
      const base = await measure(1, concurrency)
      const big = await measure(1000, concurrency)
      log(
        `concurrency ${concurrency}: 1 target p99 ${base.p99.toFixed(3)} ms, 1,000 targets p99 ${big.p99.toFixed(3)} ms`,
      )
      rows.push(['1 target (baseline)', concurrency, base.p50, base.p99, Math.round(base.perSec), 1])
      rows.push(['1,000 targets', concurrency, big.p50, big.p99, Math.round(big.perSec), big.p99 / base.p99])
    }
    return {
      title: `KEDA external scaler GetMetrics over loopback gRPC (${CALLS.toLocaleString('en-US')} calls)`,
      columns: ['targets', 'in flight', 'p50 ms', 'p99 ms', 'calls/s', 'p99 ratio vs baseline'],
      rows,
      notes: [
        'Goal: p99 ≤ 2 ms with 1,000 targets (issue #16). The baseline is the same call with one target.',
      ],
    }
  },
}
export default bench
