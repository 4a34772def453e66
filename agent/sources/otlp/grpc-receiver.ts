import { timingSafeEqual } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import type { SampleSink } from '../../types.js'
import { decodeTracesProtobuf } from './decode-protobuf.js'
import type { OtlpMappingOptions, SpanMapper } from './mapping.js'
import {
  OTLP_DEFAULT_BODY_LIMIT_BYTES,
  encodeResponseProtobuf,
  mapperOf,
  refusalMessage,
  tokenDigest,
} from './receiver.js'

/** The one method tailguard serves, as OTLP names it (opentelemetry/proto/collector/trace/v1/trace_service.proto). */
export const OTLP_GRPC_TRACE_EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export'

const raw = (b: Buffer): Buffer => b

/**
 * `TraceService` with raw-Buffer (de)serializers: grpc-js frames, decompresses and size-checks messages,
 * and the request bytes go to the same protobuf decoder as OTLP/HTTP's, with no second decoding path.
 */
const TRACE_SERVICE: grpc.ServiceDefinition = {
  Export: {
    path: OTLP_GRPC_TRACE_EXPORT_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
}

/**
 * What one gRPC export came to, for the agent's own metrics.
 *
 * @example onExport: (r) => grpcRequests.inc({ code: r.code })
 */
export interface OtlpGrpcExportResult {
  /** The gRPC status code's name: `OK`, `INVALID_ARGUMENT`, `UNAUTHENTICATED`, … */
  readonly code: keyof typeof grpc.status
  readonly spans: number
  readonly refused: number
  readonly error?: string
}

/**
 * Options of {@link startOtlpGrpcReceiver}.
 *
 * @example { host: '127.0.0.1', port: 4317, sink: recorder, token: process.env.TAILGUARD_OTLP_TOKEN }
 */
export interface OtlpGrpcReceiverOptions {
  readonly host: string
  /** 0 picks a free port. */
  readonly port: number
  readonly sink: SampleSink
  /** Mapping options (merged over OTLP_MAPPING_DEFAULTS), or a mapper to share with the HTTP receiver. */
  readonly mapping?: OtlpMappingOptions | SpanMapper
  /**
   * Largest message accepted, in bytes, both as sent and once decompressed (grpc-js checks both; default
   * 8 MiB, the OTLP/HTTP body limit). Larger: RESOURCE_EXHAUSTED.
   */
  readonly maxMessageBytes?: number
  /** When set, calls must carry `authorization: Bearer <token>` metadata; otherwise UNAUTHENTICATED. */
  readonly token?: string | null
  /** Called once per call after it is answered. Must not throw. */
  readonly onExport?: (result: OtlpGrpcExportResult) => void
}

/** A listening OTLP/gRPC receiver. */
export interface OtlpGrpcReceiver {
  readonly address: { readonly host: string; readonly port: number }
  /** Stops accepting calls, lets calls in flight finish (at most `graceMs`, default 5 s), then closes. */
  stop(graceMs?: number): Promise<void>
}

const statusName = (code: grpc.status): keyof typeof grpc.status =>
  grpc.status[code] as keyof typeof grpc.status

/**
 * Starts the agent's OTLP/gRPC trace receiver (`opentelemetry.proto.collector.trace.v1.TraceService/Export`,
 * unary, plain or gzip-compressed messages). Spans are decoded by the OTLP/HTTP receiver's protobuf
 * decoder and mapped by the same mapping, so both transports record the same thing. Answers as OTLP/gRPC
 * specifies: OK with an `ExportTraceServiceResponse` (with `partial_success` when some spans were not
 * recorded), INVALID_ARGUMENT for undecodable messages, UNAUTHENTICATED for a missing or wrong token,
 * RESOURCE_EXHAUSTED over the size limit. Bad input never gets INTERNAL and never stops the server.
 *
 * @example
 * ```ts
 * const grpcReceiver = await startOtlpGrpcReceiver({ host: '127.0.0.1', port: 4317, sink: recorder })
 * // … OpenTelemetry SDKs export with OTLPTraceExporter({ url: 'http://127.0.0.1:4317' }) from exporter-trace-otlp-grpc
 * await grpcReceiver.stop()
 * ```
 */
export async function startOtlpGrpcReceiver(options: OtlpGrpcReceiverOptions): Promise<OtlpGrpcReceiver> {
  const mapper = mapperOf(options.mapping)
  const sink = options.sink
  const maxBytes = options.maxMessageBytes ?? OTLP_DEFAULT_BODY_LIMIT_BYTES
  const expected = options.token ? tokenDigest(options.token) : undefined
  const report = (r: OtlpGrpcExportResult) => {
    try {
      options.onExport?.(r)
    } catch {
      // A failing observer must not turn a good export into an error.
    }
  }

  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxBytes,
    'grpc.max_send_message_length': 1024 * 1024,
    'grpc.enable_channelz': 0,
  })
  server.addService(TRACE_SERVICE, {
    Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const fail = (code: grpc.status, message: string) => {
        report({ code: statusName(code), spans: 0, refused: 0, error: message })
        callback({ code, details: message })
      }
      if (expected) {
        const values = call.metadata.get('authorization')
        const header = typeof values[0] === 'string' ? values[0] : undefined
        const m = header !== undefined ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null
        if (!m || !timingSafeEqual(tokenDigest(m[1]!), expected))
          return fail(
            grpc.status.UNAUTHENTICATED,
            header === undefined ? 'missing bearer token' : 'wrong bearer token',
          )
      }
      const body = Buffer.isBuffer(call.request) ? call.request : Buffer.alloc(0)
      const decoded = decodeTracesProtobuf(body)
      if (!decoded.ok) return fail(grpc.status.INVALID_ARGUMENT, decoded.error)
      const outcome = mapper.map(decoded.spans, sink)
      report({ code: 'OK', spans: decoded.spans.length, refused: outcome.refused })
      const message = outcome.refused > 0 ? refusalMessage(outcome) : ''
      callback(null, Buffer.from(encodeResponseProtobuf(outcome.refused, message)))
    },
  })

  const bindHost = options.host.includes(':') ? `[${options.host}]` : options.host
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${bindHost}:${options.port}`, grpc.ServerCredentials.createInsecure(), (err, p) => {
      if (!err) return resolve(p)
      // grpc-js folds the listen error into its message; keep its errno code for callers that check it.
      const e = new Error(`cannot listen for OTLP/gRPC on ${bindHost}:${options.port}: ${err.message}`)
      const code = /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL)\b/.exec(err.message)?.[1]
      if (code) (e as NodeJS.ErrnoException).code = code
      reject(e)
    }),
  )
  return {
    address: { host: options.host, port },
    stop(graceMs = 5000) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown()
          resolve()
        }, graceMs)
        timer.unref()
        server.tryShutdown(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    },
  }
}
