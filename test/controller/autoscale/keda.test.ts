/* eslint-disable @typescript-eslint/no-explicit-any -- the gRPC client and its messages are built at run time from the proto file */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import {
  createRecommendationBoard,
  EXTERNAL_SCALER_PROTO,
  startKedaScaler,
} from '../../../controller/index.js'
import type { RecommendationBoard, RunningKedaScaler } from '../../../controller/index.js'
import { recommendation } from './fixtures.js'

type Unary = (req: unknown, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res: any) => void) => void
interface ScalerClient extends grpc.Client {
  IsActive: Unary
  GetMetricSpec: Unary
  GetMetrics: Unary
  StreamIsActive(req: unknown, md?: grpc.Metadata): grpc.ClientReadableStream<{ result: boolean }>
}

/** A real gRPC client built from the shipped proto file, as KEDA's is built from the same contract. */
function clientFor(port: number): ScalerClient {
  const def = protoLoader.loadSync(EXTERNAL_SCALER_PROTO(), { keepCase: true, longs: Number, defaults: true })
  const pkg = grpc.loadPackageDefinition(def) as any
  return new pkg.externalscaler.ExternalScaler(`127.0.0.1:${port}`, grpc.credentials.createInsecure())
}

const call = (client: ScalerClient, method: 'IsActive' | 'GetMetricSpec' | 'GetMetrics', req: unknown) =>
  new Promise<any>((ok, fail) =>
    client[method](req, new grpc.Metadata(), (err, res) => (err ? fail(err) : ok(res))),
  )

const TOKEN = 'keda-test-token-0123456789'
const ref = (meta: Record<string, string>) => ({
  name: 'chat-scaler',
  namespace: 'default',
  scalerMetadata: { authToken: TOKEN, ...meta },
})

/**
 * Kubernetes' HPA arithmetic for an External metric with an AverageValue target, as KEDA sets it up: KEDA turns
 * metricValueFloat and targetSizeFloat into milli-quantities; the HPA keeps the current count when the usage
 * ratio is within its tolerance (0.1 by default), else takes ceil(total / target).
 */
function hpaAverageValueReplicas(
  metricValueFloat: number,
  targetSizeFloat: number,
  current: number,
  tolerance = 0.1,
) {
  const usageMilli = Math.trunc(metricValueFloat * 1000)
  const targetMilli = Math.trunc(targetSizeFloat * 1000)
  const ratio = usageMilli / (targetMilli * current)
  if (Math.abs(1 - ratio) <= tolerance) return current
  return Math.ceil(usageMilli / targetMilli)
}

describe('KEDA external scaler (gRPC)', () => {
  let board: RecommendationBoard
  let scaler: RunningKedaScaler
  let client: ScalerClient

  beforeEach(async () => {
    board = createRecommendationBoard()
    board.publish(recommendation())
    board.publish(
      recommendation({ ref: { service: 'vision', model: 'resnet', version: '2' }, desiredReplicas: 7 }),
    )
    scaler = await startKedaScaler({ source: board, tokens: [TOKEN], host: '127.0.0.1', port: 0 })
    client = clientFor(scaler.port)
  })
  afterEach(async () => {
    client.close()
    await scaler.close()
  })

  it('answers GetMetricSpec and GetMetrics so that KEDA arithmetic yields the desired replicas', async () => {
    const spec = await call(client, 'GetMetricSpec', ref({ service: 'chat' }))
    expect(spec.metricSpecs).toHaveLength(1)
    const [ms] = spec.metricSpecs
    expect(ms).toEqual({ metricName: 'tailguard-chat-desiredreplicas', targetSize: 1, targetSizeFloat: 1 })
    const metrics = await call(client, 'GetMetrics', {
      scaledObjectRef: ref({ service: 'chat' }),
      metricName: ms.metricName,
    })
    expect(metrics.metricValues).toEqual([
      { metricName: 'tailguard-chat-desiredreplicas', metricValue: 3, metricValueFloat: 3 },
    ])
    // The arithmetic over a range of decisions and current sizes, outside the HPA's own tolerance band.
    for (let desired = 1; desired <= 60; desired++) {
      board.publish(recommendation({ desiredReplicas: desired }))
      const m = await call(client, 'GetMetrics', {
        scaledObjectRef: ref({ service: 'chat' }),
        metricName: ms.metricName,
      })
      const v = m.metricValues[0]
      expect(v.metricValue).toBe(desired)
      for (const current of [1, 2, 3, 5, 8, 13, 21, 34, 55]) {
        if (Math.abs(1 - desired / current) <= 0.1) continue
        expect(hpaAverageValueReplicas(v.metricValueFloat, ms.targetSizeFloat, current)).toBe(desired)
      }
    }
  })

  it('matches model and version, and serves raw signals with their targets', async () => {
    const meta = { service: 'vision', model: 'resnet', version: '2' }
    const m = await call(client, 'GetMetrics', {
      scaledObjectRef: ref(meta),
      metricName: 's0-tailguard-vision',
    })
    expect(m.metricValues[0]).toMatchObject({
      metricName: 's0-tailguard-vision',
      metricValue: 7,
      metricValueFloat: 7,
    })
    const spec = await call(
      client,
      'GetMetricSpec',
      ref({ service: 'chat', metric: 'queueDepth', targetValue: '4' }),
    )
    expect(spec.metricSpecs[0]).toEqual({
      metricName: 'tailguard-chat-queuedepth',
      targetSize: 4,
      targetSizeFloat: 4,
    })
    const q = await call(client, 'GetMetrics', {
      scaledObjectRef: ref({ service: 'chat', metric: 'queueDepth', targetValue: '4' }),
      metricName: 'tailguard-chat-queuedepth',
    })
    expect(q.metricValues[0]).toMatchObject({ metricValue: 12, metricValueFloat: 12 })
    const burn = await call(client, 'GetMetrics', {
      scaledObjectRef: ref({ service: 'chat', metric: 'burnRate' }),
      metricName: 'x',
    })
    expect(burn.metricValues[0]).toMatchObject({ metricValue: 1, metricValueFloat: 0.5 })
  })

  it('IsActive is false only when scaling to zero is safe', async () => {
    expect(await call(client, 'IsActive', ref({ service: 'chat' }))).toEqual({ result: true })
    board.publish(recommendation({ desiredReplicas: 0, scaleToZeroSafe: true }))
    expect(await call(client, 'IsActive', ref({ service: 'chat' }))).toEqual({ result: false })
  })

  it('StreamIsActive sends the state at once and again on change', async () => {
    const stream = client.StreamIsActive(ref({ service: 'chat' }))
    const seen: boolean[] = []
    const got = (n: number) =>
      new Promise<void>((ok) => {
        const check = () => (seen.length >= n ? ok() : setTimeout(check, 10))
        check()
      })
    stream.on('data', (d) => seen.push(d.result))
    stream.on('error', () => undefined)
    await got(1)
    expect(seen).toEqual([true])
    board.publish(recommendation({ desiredReplicas: 5 })) // still active: no message
    board.publish(recommendation({ desiredReplicas: 0, scaleToZeroSafe: true }))
    await got(2)
    board.publish(recommendation({ desiredReplicas: 1 }))
    await got(3)
    expect(seen).toEqual([true, false, true])
    stream.cancel()
  })

  it('refuses bad metadata, unknown services and wrong tokens with the right status codes', async () => {
    const fail = (method: 'IsActive' | 'GetMetricSpec' | 'GetMetrics', req: unknown) =>
      call(client, method, req).then(
        () => {
          throw new Error('expected an error')
        },
        (err: grpc.ServiceError) => err,
      )
    const missing = await fail('GetMetricSpec', ref({}))
    expect(missing.code).toBe(grpc.status.INVALID_ARGUMENT)
    expect(missing.details).toMatch(/"service" is required/)
    const badMetric = await fail('GetMetricSpec', ref({ service: 'chat', metric: 'p99' }))
    expect(badMetric.code).toBe(grpc.status.INVALID_ARGUMENT)
    expect(badMetric.details).toMatch(/metric/)
    const typo = await fail('GetMetricSpec', ref({ service: 'chat', modle: 'x' }))
    expect(typo.code).toBe(grpc.status.INVALID_ARGUMENT)
    expect(typo.details).toMatch(/unknown metadata key "modle"/)
    const unknown = await fail('GetMetrics', { scaledObjectRef: ref({ service: 'chta' }), metricName: 'm' })
    expect(unknown.code).toBe(grpc.status.NOT_FOUND)
    expect(unknown.details).toMatch(/did you mean "chat"/)
    const wrong = await fail('IsActive', {
      name: 'x',
      namespace: 'd',
      scalerMetadata: { service: 'chat', authToken: 'nope' },
    })
    expect(wrong.code).toBe(grpc.status.UNAUTHENTICATED)
    const none = await fail('IsActive', { name: 'x', namespace: 'd', scalerMetadata: { service: 'chat' } })
    expect(none.code).toBe(grpc.status.UNAUTHENTICATED)
    // A bearer token in the gRPC call metadata also authenticates.
    const md = new grpc.Metadata()
    md.set('authorization', `Bearer ${TOKEN}`)
    const res = await new Promise<any>((ok, ko) =>
      client.IsActive({ name: 'x', namespace: 'd', scalerMetadata: { service: 'chat' } }, md, (e, r) =>
        e ? ko(e) : ok(r),
      ),
    )
    expect(res).toEqual({ result: true })
  })

  it('will not start without any authentication unless told to', async () => {
    await expect(startKedaScaler({ source: board, tokens: [], host: '127.0.0.1', port: 0 })).rejects.toThrow(
      /token/,
    )
  })
})
