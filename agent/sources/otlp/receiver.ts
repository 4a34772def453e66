import { createHash, timingSafeEqual } from 'node:crypto'
import { promisify } from 'node:util'
import { gunzip, inflate } from 'node:zlib'
import protobuf from 'protobufjs/minimal.js'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { SampleSink } from '../../types.js'
import { decodeTracesJson } from './decode-json.js'
import { decodeTracesProtobuf } from './decode-protobuf.js'
import { createSpanMapper } from './mapping.js'
import type { MapOutcome, OtlpMappingOptions, SpanMapper } from './mapping.js'
import type { DecodeResult } from './types.js'

const gunzipAsync = promisify(gunzip)
const inflateAsync = promisify(inflate)

/** Default limit on the request body as sent (compressed or not): 8 MiB. @example { bodyLimitBytes: OTLP_DEFAULT_BODY_LIMIT_BYTES } */
export const OTLP_DEFAULT_BODY_LIMIT_BYTES = 8 * 1024 * 1024
/** Default limit on the body after decompression: 64 MiB. @example { maxDecompressedBytes: OTLP_DEFAULT_MAX_DECOMPRESSED_BYTES } */
export const OTLP_DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

/**
 * What one export request came to, for the agent's own metrics and logs.
 *
 * @example
 * ```ts
 * onExport: (r) => exportsTotal.inc({ code: String(r.statusCode), encoding: r.encoding })
 * ```
 */
export interface OtlpExportResult {
  readonly statusCode: number
  readonly encoding: 'protobuf' | 'json' | 'unknown'
  readonly spans: number
  readonly refused: number
  /** The message sent back when the request was refused as a whole (4xx). */
  readonly error?: string
}

/**
 * Options of {@link otlpReceiver}.
 *
 * @example
 * ```ts
 * await app.register(otlpReceiver, { sink: recorder, token: process.env.TG_AGENT_TOKEN })
 * ```
 */
export interface OtlpReceiverOptions {
  readonly sink: SampleSink
  /** Mapping options (merged over OTLP_MAPPING_DEFAULTS), or a mapper to share. */
  readonly mapping?: OtlpMappingOptions | SpanMapper
  /** Largest request body accepted as sent, in bytes (default 8 MiB). Larger: 413. */
  readonly bodyLimitBytes?: number
  /** Largest body accepted after gzip/deflate decompression, in bytes (default 64 MiB). Larger: 413. */
  readonly maxDecompressedBytes?: number
  /** When set, requests must carry `Authorization: Bearer <token>`; otherwise 401. */
  readonly token?: string
  /** Called once per request after it is answered (metrics, debug logs). Must not throw. */
  readonly onExport?: (result: OtlpExportResult) => void
}

type Encoding = 'protobuf' | 'json'

// google.rpc.Status codes used in error bodies, as OTLP/HTTP asks (spec: "Failures").
const RPC_INVALID_ARGUMENT = 3
const RPC_RESOURCE_EXHAUSTED = 8
const RPC_UNAUTHENTICATED = 16
const RPC_INTERNAL = 13

function rpcCodeFor(httpStatus: number): number {
  if (httpStatus === 401) return RPC_UNAUTHENTICATED
  if (httpStatus === 413) return RPC_RESOURCE_EXHAUSTED
  if (httpStatus >= 500) return RPC_INTERNAL
  return RPC_INVALID_ARGUMENT
}

/** The media type of a Content-Type header, lowercase, without parameters. */
function mediaType(header: string | undefined): string {
  if (!header) return ''
  const semi = header.indexOf(';')
  return (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase()
}

function encodingOf(req: FastifyRequest): Encoding | undefined {
  const t = mediaType(req.headers['content-type'])
  if (t === 'application/x-protobuf') return 'protobuf'
  if (t === 'application/json') return 'json'
  return undefined
}

/** `google.rpc.Status` in protobuf: 1 code (int32), 2 message (string). */
function encodeStatusProtobuf(code: number, message: string): Uint8Array {
  return protobuf.Writer.create()
    .uint32((1 << 3) | 0)
    .int32(code)
    .uint32((2 << 3) | 2)
    .string(message)
    .finish()
}

/**
 * `ExportTraceServiceResponse` in protobuf: 1 partial_success (ExportTracePartialSuccess: 1 rejected_spans
 * int64, 2 error_message string). Empty when everything was accepted. Shared by the HTTP and gRPC receivers.
 *
 * @example encodeResponseProtobuf(2, '2 of 3 spans not recorded (2 unknown_phase)')
 */
export function encodeResponseProtobuf(rejected: number, message: string): Uint8Array {
  if (rejected === 0 && message === '') return new Uint8Array(0)
  const w = protobuf.Writer.create()
  w.uint32((1 << 3) | 2).fork()
  w.uint32((1 << 3) | 0).int64(rejected)
  w.uint32((2 << 3) | 2).string(message)
  w.ldelim()
  return w.finish()
}

/**
 * The `error_message` of a partial success: how many spans were not recorded, and why.
 *
 * @example refusalMessage(mapper.map(spans, sink)) // '1 of 3 spans not recorded (1 unknown_phase); …'
 */
export function refusalMessage(outcome: MapOutcome): string {
  const parts = Object.entries(outcome.refusedBy).map(([reason, n]) => `${n} ${reason}`)
  const hints = Object.keys(outcome.refusedBy).flatMap((reason) => REFUSAL_HINTS[reason] ?? [])
  return `${outcome.refused} of ${outcome.accepted + outcome.refused} spans not recorded (${parts.join(', ')})${hints.map((h) => `; ${h}`).join('')}`
}

/** What to do about each reason a span is not recorded (the mapping's refusals). */
const REFUSAL_HINTS: Readonly<Record<string, string>> = {
  unknown_phase: "set the tailguard.phase attribute or add the span name to the mapping's spanNamePhases",
  negative_duration: 'a span ended before it started (endTimeUnixNano < startTimeUnixNano)',
}

/** Label repairs the sink has made so far, when it is the agent's recorder (0 for other sinks). */
function repairedLabels(sink: SampleSink): number {
  const stats = (sink as { stats?: () => { labelsRepaired: number } }).stats
  return typeof stats === 'function' ? stats.call(sink).labelsRepaired : 0
}

class HttpFailure {
  constructor(
    readonly statusCode: number,
    readonly message: string,
  ) {}
}

function sendError(reply: FastifyReply, encoding: Encoding | undefined, statusCode: number, message: string) {
  const code = rpcCodeFor(statusCode)
  reply.code(statusCode)
  if (encoding === 'protobuf')
    return reply.type('application/x-protobuf').send(Buffer.from(encodeStatusProtobuf(code, message)))
  return reply.type('application/json').send({ code, message })
}

/**
 * The mapper a receiver uses: the one given (shared between receivers), or one built from mapping options.
 *
 * @example const mapper = mapperOf({ spanNamePhases: { infer: 'kernel' } })
 */
export function mapperOf(mapping: OtlpMappingOptions | SpanMapper | undefined): SpanMapper {
  return mapping && 'map' in mapping
    ? (mapping as SpanMapper)
    : createSpanMapper(mapping as OtlpMappingOptions | undefined)
}

/**
 * SHA-256 of a token, so tokens of any length compare in constant time with `timingSafeEqual`.
 *
 * @example timingSafeEqual(tokenDigest(given), tokenDigest(expected))
 */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest()
}

async function decompress(
  body: Buffer,
  contentEncoding: string | undefined,
  maxBytes: number,
): Promise<Buffer | HttpFailure> {
  const enc = (contentEncoding ?? '').trim().toLowerCase()
  if (enc === '' || enc === 'identity') return body
  if (enc !== 'gzip' && enc !== 'deflate')
    return new HttpFailure(415, `unsupported Content-Encoding "${enc}": use gzip or none`)
  try {
    return enc === 'gzip'
      ? await gunzipAsync(body, { maxOutputLength: maxBytes })
      : await inflateAsync(body, { maxOutputLength: maxBytes })
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ERR_BUFFER_TOO_LARGE')
      return new HttpFailure(413, `body is larger than ${maxBytes} bytes once decompressed`)
    return new HttpFailure(400, `body is not valid ${enc} data: ${(err as Error).message}`)
  }
}

/**
 * The agent's OTLP/HTTP trace receiver: a fastify plugin registering `POST /v1/traces` (register it with no
 * prefix so the path is the standard one). Accepts `application/x-protobuf` and `application/json`, plain
 * or `Content-Encoding: gzip` (or deflate), decodes only what tailguard needs and folds each span into the
 * sink through the mapping. Answers as OTLP/HTTP specifies: 200 with an `ExportTraceServiceResponse` in the
 * request's encoding (with `partial_success` when some spans were not recorded), 400 for undecodable
 * payloads, 401 for a missing or wrong bearer token, 413 for bodies over the limits, 415 for other
 * content types or encodings; error bodies are a `google.rpc.Status` saying what was wrong. It never
 * answers 5xx for bad input.
 *
 * @example
 * ```ts
 * const app = Fastify()
 * await app.register(otlpReceiver, { sink: recorder, mapping: { spanNamePhases: { infer: 'kernel' } } })
 * await app.listen({ host: '0.0.0.0', port: 4318 })
 * ```
 */
export const otlpReceiver: FastifyPluginAsync<OtlpReceiverOptions> = async (app, options) => {
  const sink = options.sink
  const mapper = mapperOf(options.mapping)
  const bodyLimit = options.bodyLimitBytes ?? OTLP_DEFAULT_BODY_LIMIT_BYTES
  const maxDecompressed = options.maxDecompressedBytes ?? OTLP_DEFAULT_MAX_DECOMPRESSED_BYTES
  const expected =
    options.token !== undefined && options.token !== '' ? tokenDigest(options.token) : undefined
  const report = (r: OtlpExportResult) => {
    try {
      options.onExport?.(r)
    } catch {
      // A failing observer must not turn a good export into an error.
    }
  }

  // This plugin's own parsers (encapsulated): every body arrives as a Buffer and the handler decides.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_req, body, done) => done(null, body))

  app.setErrorHandler((err: { statusCode?: number; code?: string; message?: string }, req, reply) => {
    let status = typeof err.statusCode === 'number' && err.statusCode >= 400 ? err.statusCode : 500
    let message = err.message ?? 'error'
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || status === 413) {
      status = 413
      message = `request body is larger than the limit of ${bodyLimit} bytes`
    }
    if (status >= 500) req.log.error({ err }, 'otlp receiver failed')
    report({
      statusCode: status,
      encoding: encodingOf(req) ?? 'unknown',
      spans: 0,
      refused: 0,
      error: message,
    })
    return sendError(reply, encodingOf(req), status, message)
  })

  if (expected)
    app.addHook('onRequest', async (req, reply) => {
      const header = req.headers.authorization
      const m = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null
      const ok = m !== null && timingSafeEqual(tokenDigest(m[1]!), expected)
      if (!ok) {
        const message = header === undefined ? 'missing bearer token' : 'wrong bearer token'
        report({
          statusCode: 401,
          encoding: encodingOf(req) ?? 'unknown',
          spans: 0,
          refused: 0,
          error: message,
        })
        return sendError(reply.header('www-authenticate', 'Bearer'), encodingOf(req), 401, message)
      }
      return undefined
    })

  app.post('/v1/traces', { bodyLimit }, async (req, reply) => {
    const encoding = encodingOf(req)
    const fail = (statusCode: number, message: string) => {
      report({ statusCode, encoding: encoding ?? 'unknown', spans: 0, refused: 0, error: message })
      return sendError(reply, encoding, statusCode, message)
    }
    if (!encoding) {
      const got = req.headers['content-type']
      return fail(
        415,
        `unsupported Content-Type ${got === undefined ? '(none)' : JSON.stringify(got)}: use application/x-protobuf or application/json`,
      )
    }
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)
    const body = await decompress(raw, req.headers['content-encoding'] as string | undefined, maxDecompressed)
    if (body instanceof HttpFailure) return fail(body.statusCode, body.message)

    const decoded: DecodeResult =
      encoding === 'protobuf' ? decodeTracesProtobuf(body) : decodeTracesJson(body)
    if (!decoded.ok) return fail(400, decoded.error)

    const repairedBefore = repairedLabels(sink)
    const outcome = mapper.map(decoded.spans, sink)
    const repaired = repairedLabels(sink) - repairedBefore
    report({ statusCode: 200, encoding, spans: decoded.spans.length, refused: outcome.refused })
    // OTLP partial success: what was refused and why; label repairs ride along as a warning.
    const notes = [
      ...(outcome.refused > 0 ? [refusalMessage(outcome)] : []),
      ...(repaired > 0
        ? [
            `${repaired} label value(s) repaired: invalid UTF-16 replaced by U+FFFD, NUL removed or cut to 256 characters`,
          ]
        : []),
    ]
    const message = notes.join('; ')
    reply.code(200)
    if (encoding === 'protobuf')
      return reply
        .type('application/x-protobuf')
        .send(Buffer.from(encodeResponseProtobuf(outcome.refused, message)))
    return reply
      .type('application/json')
      .send(
        message !== ''
          ? { partialSuccess: { rejectedSpans: String(outcome.refused), errorMessage: message } }
          : {},
      )
  })
}
