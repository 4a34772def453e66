import * as grpc from '@grpc/grpc-js'
import { afterEach, describe, expect, it } from 'vitest'
import {
  OTLP_GRPC_TRACE_EXPORT_PATH,
  createRecorder,
  startOtlpGrpcReceiver,
} from '../../../../agent/index.js'
import type {
  OtlpGrpcExportResult,
  OtlpGrpcReceiver,
  OtlpGrpcReceiverOptions,
  Recorder,
} from '../../../../agent/index.js'
import { request, span, toProtobuf } from './payloads.js'
import { decodePartialSuccess, good, partly } from './helpers.js'

// The OTLP/gRPC receiver over a real loopback socket, called by a raw grpc-js client (no OpenTelemetry
// code), so that every status it answers is checked as a client sees it. The OpenTelemetry SDK's own gRPC
// exporter is tested end to end in test/e2e/otel-grpc.test.ts.

const TOKEN = 'otlp-grpc-token-0123456789'
let receiver: OtlpGrpcReceiver | undefined
const clients: grpc.Client[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  await receiver?.stop()
  receiver = undefined
})

async function build(
  options: Partial<OtlpGrpcReceiverOptions> = {},
): Promise<{ recorder: Recorder; results: OtlpGrpcExportResult[]; address: string }> {
  const recorder = createRecorder()
  const results: OtlpGrpcExportResult[] = []
  receiver = await startOtlpGrpcReceiver({
    host: '127.0.0.1',
    port: 0,
    sink: recorder,
    onExport: (r) => results.push(r),
    ...options,
  })
  return { recorder, results, address: `127.0.0.1:${receiver.address.port}` }
}

interface CallResult {
  readonly error: grpc.ServiceError | null
  readonly response: Buffer | undefined
}

function call(
  address: string,
  body: Buffer,
  opts: { token?: string; gzip?: boolean; path?: string } = {},
): Promise<CallResult> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), {
    ...(opts.gzip ? { 'grpc.default_compression_algorithm': 2 } : {}), // 2 = gzip
  })
  clients.push(client)
  const md = new grpc.Metadata()
  if (opts.token !== undefined) md.set('authorization', `Bearer ${opts.token}`)
  return new Promise((resolve) =>
    client.makeUnaryRequest(
      opts.path ?? OTLP_GRPC_TRACE_EXPORT_PATH,
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      md,
      { deadline: Date.now() + 20_000 },
      (error, response) => resolve({ error, response }),
    ),
  )
}

describe('OTLP/gRPC TraceService/Export', () => {
  it('accepts an export: OK with an empty ExportTraceServiceResponse, spans recorded', async () => {
    const { recorder, results, address } = await build()
    const r = await call(address, toProtobuf(good))
    expect(r.error).toBeNull()
    expect(r.response!.length).toBe(0)
    const s = recorder.drain().series[0]!
    expect(s.labels.service).toBe('chat')
    expect(Object.keys(s.histograms).sort()).toEqual(['kernel', 'queue'])
    expect(results).toEqual([{ code: 'OK', spans: 2, refused: 0 }])
  })

  it('accepts gzip-compressed messages', async () => {
    const { recorder, address } = await build()
    const r = await call(address, toProtobuf(good), { gzip: true })
    expect(r.error).toBeNull()
    expect(recorder.drain().series[0]!.histograms.queue).toBeDefined()
  })

  it('answers partial_success with rejected_spans and the reasons, status OK', async () => {
    const { recorder, address } = await build()
    const r = await call(address, toProtobuf(partly))
    expect(r.error).toBeNull()
    const ps = decodePartialSuccess(r.response!)
    expect(ps?.one).toBe(2)
    expect(ps?.two).toMatch(/2 of 3 spans not recorded \(1 unknown_phase, 1 negative_duration\)/)
    expect(recorder.drain().dropped).toEqual({ unknown_phase: 1, negative_duration: 1 })
  })

  it('answers INVALID_ARGUMENT naming the problem for garbage bytes, and keeps serving', async () => {
    const { recorder, results, address } = await build()
    const truncated = await call(address, toProtobuf(good).subarray(0, 20))
    expect(truncated.error?.code).toBe(grpc.status.INVALID_ARGUMENT)
    expect(truncated.error?.details).toMatch(/^invalid OTLP protobuf payload: /)
    const garbage = await call(address, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x01]))
    expect(garbage.error?.code).toBe(grpc.status.INVALID_ARGUMENT)
    expect(results.map((r) => r.code)).toEqual(['INVALID_ARGUMENT', 'INVALID_ARGUMENT'])
    expect((await call(address, toProtobuf(good))).error).toBeNull()
    expect(recorder.drain().series).toHaveLength(1)
  })

  it('answers RESOURCE_EXHAUSTED over the size limit, as sent and once decompressed', async () => {
    const { recorder, address } = await build({ maxMessageBytes: 64 * 1024 })
    const many = request(
      { 'service.name': 'chat' },
      Array.from({ length: 2000 }, (_, i) => span({ name: 'queue', durationNs: 1_000_000 + i })),
    )
    const body = toProtobuf(many)
    expect(body.length).toBeGreaterThan(64 * 1024)
    const plain = await call(address, body)
    expect(plain.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED)
    // Repetitive spans compress far below the limit; the limit holds for the decompressed size too.
    const zipped = await call(address, body, { gzip: true })
    expect(zipped.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED)
    expect(recorder.drain().series).toHaveLength(0)
    expect((await call(address, toProtobuf(good))).error).toBeNull()
  })

  it('with a token: UNAUTHENTICATED without it or with a wrong one, OK with it', async () => {
    const { recorder, results, address } = await build({ token: TOKEN })
    const none = await call(address, toProtobuf(good))
    expect(none.error?.code).toBe(grpc.status.UNAUTHENTICATED)
    expect(none.error?.details).toBe('missing bearer token')
    const wrong = await call(address, toProtobuf(good), { token: 'not-the-token-0123456789' })
    expect(wrong.error?.code).toBe(grpc.status.UNAUTHENTICATED)
    expect(wrong.error?.details).toBe('wrong bearer token')
    expect(recorder.drain().series).toHaveLength(0)
    const right = await call(address, toProtobuf(good), { token: TOKEN })
    expect(right.error).toBeNull()
    expect(recorder.drain().series).toHaveLength(1)
    expect(results.map((r) => r.code)).toEqual(['UNAUTHENTICATED', 'UNAUTHENTICATED', 'OK'])
  })

  it('answers UNIMPLEMENTED for other methods', async () => {
    const { address } = await build()
    const r = await call(address, toProtobuf(good), {
      path: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
    })
    expect(r.error?.code).toBe(grpc.status.UNIMPLEMENTED)
  })

  it('refuses to start on a port in use, with the errno code', async () => {
    await build()
    const busy = receiver!.address.port
    await expect(
      startOtlpGrpcReceiver({ host: '127.0.0.1', port: busy, sink: createRecorder() }),
    ).rejects.toMatchObject({ code: 'EADDRINUSE', message: expect.stringContaining(`127.0.0.1:${busy}`) })
  })
})
