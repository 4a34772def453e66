import { join } from 'node:path'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { createTokenAuth, packageRoot } from '../../collector/index.js'
import { AutoscaleQueryInvalid, metricName, metricValue, parseAutoscaleQuery } from './metrics.js'
import type { AutoscaleQuery } from './metrics.js'
import { refKey, unknownTargetHint } from './recommendation.js'
import type { AutoscaleSource, Recommendation } from './recommendation.js'

/** Where KEDA's `externalscaler.proto` ships in the package (read at start-up). */
export const EXTERNAL_SCALER_PROTO = (): string =>
  join(packageRoot(), 'controller', 'autoscale', 'externalscaler.proto')

/** The default port of the KEDA external scaler (`--keda-port`). */
export const DEFAULT_KEDA_PORT = 7072

/** TLS for the scaler's gRPC port: PEM certificate and key, and a CA to require client certificates (mTLS). */
export interface GrpcTls {
  readonly cert: Buffer
  readonly key: Buffer
  readonly clientCa?: Buffer
}

export interface KedaScalerOptions {
  readonly source: AutoscaleSource
  /**
   * Tokens a trigger may present (metadata `authToken`, or gRPC metadata `authorization: Bearer …`), compared
   * in constant time. Empty: no token is asked for, which is allowed only with mTLS (`tls.clientCa`) or
   * `allowUnauthenticated`.
   */
  readonly tokens: readonly string[]
  readonly allowUnauthenticated?: boolean
  readonly tls?: GrpcTls
  readonly host?: string
  readonly port?: number
}

export interface RunningKedaScaler {
  readonly port: number
  close(): Promise<void>
}

interface ScaledObjectRef {
  name: string
  namespace: string
  scalerMetadata: Record<string, string>
}

/**
 * Serves KEDA's external scaler (`externalscaler.ExternalScaler`: IsActive, StreamIsActive, GetMetricSpec,
 * GetMetrics) over gRPC from an {@link AutoscaleSource}.
 *
 * - `GetMetricSpec` targets `desiredReplicas` at 1 per replica (raw signals at `targetValue`), so KEDA's
 *   AverageValue arithmetic, ceil(metric / target), yields tailguard's desired replicas exactly.
 * - `IsActive` is false only when the recommendation says scaling to zero is safe.
 * - `StreamIsActive` sends the current state at once and again whenever it changes.
 * - An unknown service is `NOT_FOUND` (with the closest names), bad metadata `INVALID_ARGUMENT`, a missing or
 *   wrong token `UNAUTHENTICATED`.
 *
 * @example
 * ```ts
 * const scaler = await startKedaScaler({ source: board, tokens: [readToken], port: 9090 })
 * // ScaledObject trigger: type external, metadata { scalerAddress: 'tailguard:9090', service: 'chat' }
 * await scaler.close()
 * ```
 */
export async function startKedaScaler(opts: KedaScalerOptions): Promise<RunningKedaScaler> {
  if (opts.tokens.length === 0 && !opts.tls?.clientCa && !opts.allowUnauthenticated)
    throw new Error('the KEDA scaler needs a token, client-certificate TLS, or allowUnauthenticated')
  const definition = protoLoader.loadSync(EXTERNAL_SCALER_PROTO(), {
    keepCase: true,
    longs: Number,
    defaults: true,
  })
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    externalscaler: { ExternalScaler: { service: grpc.ServiceDefinition } }
  }
  const auth = createTokenAuth(opts.tokens.map((token) => ({ token, scope: 'read' as const })))
  const streams = new Set<() => void>()

  const authorized = (ref: ScaledObjectRef | undefined, md: grpc.Metadata): boolean => {
    if (opts.tokens.length === 0) return true
    const header = md.get('authorization')[0]
    const bearer = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined
    const presented = ref?.scalerMetadata?.authToken ?? ref?.scalerMetadata?.token ?? bearer
    return presented !== undefined && auth.check(`Bearer ${presented}`, 'read').kind === 'ok'
  }

  /** Resolves a request to its query and recommendation, or a gRPC error. */
  const resolve = (
    ref: ScaledObjectRef | undefined,
    md: grpc.Metadata,
  ): { query: AutoscaleQuery; rec: Recommendation } | { error: Partial<grpc.StatusObject> } => {
    if (!authorized(ref, md))
      return {
        error: {
          code: grpc.status.UNAUTHENTICATED,
          details:
            'missing or wrong token: set metadata authToken (or gRPC metadata authorization: Bearer …)',
        },
      }
    let query: AutoscaleQuery
    try {
      query = parseAutoscaleQuery(ref?.scalerMetadata ?? {})
    } catch (err) {
      if (err instanceof AutoscaleQueryInvalid)
        return { error: { code: grpc.status.INVALID_ARGUMENT, details: err.message } }
      throw err
    }
    const rec = opts.source.get(query.ref)
    if (!rec)
      return {
        error: {
          code: grpc.status.NOT_FOUND,
          details: unknownTargetHint(opts.source, query.ref, 'no tailguard controller target for'),
        },
      }
    return { query, rec }
  }

  const isActive = (rec: Recommendation): boolean => !rec.scaleToZeroSafe

  const impl: grpc.UntypedServiceImplementation = {
    IsActive(call: grpc.ServerUnaryCall<ScaledObjectRef, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const r = resolve(call.request, call.metadata)
      if ('error' in r) return cb(r.error)
      cb(null, { result: isActive(r.rec) })
    },
    StreamIsActive(call: grpc.ServerWritableStream<ScaledObjectRef, unknown>) {
      const r = resolve(call.request, call.metadata)
      if ('error' in r) {
        call.emit('error', r.error)
        return
      }
      const key = refKey(r.query.ref)
      let last = isActive(r.rec)
      call.write({ result: last })
      const unsubscribe = opts.source.subscribe((rec) => {
        if (refKey(rec.ref) !== key) return
        const now = isActive(rec)
        if (now !== last) {
          last = now
          call.write({ result: now })
        }
      })
      const end = () => {
        unsubscribe()
        streams.delete(finish)
      }
      const finish = () => {
        end()
        call.end()
      }
      streams.add(finish)
      call.on('cancelled', end)
      call.on('close', end)
    },
    GetMetricSpec(call: grpc.ServerUnaryCall<ScaledObjectRef, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const r = resolve(call.request, call.metadata)
      if ('error' in r) return cb(r.error)
      const { query } = r
      cb(null, {
        metricSpecs: [
          {
            metricName: metricName(query.ref, query.metric),
            targetSize: Math.max(1, Math.round(query.target)),
            targetSizeFloat: query.target,
          },
        ],
      })
    },
    GetMetrics(
      call: grpc.ServerUnaryCall<{ scaledObjectRef?: ScaledObjectRef; metricName: string }, unknown>,
      cb: grpc.sendUnaryData<unknown>,
    ) {
      const r = resolve(call.request.scaledObjectRef, call.metadata)
      if ('error' in r) return cb(r.error)
      const { query, rec } = r
      const value = metricValue(rec, query.metric)
      if (value === null)
        return cb({
          code: grpc.status.UNAVAILABLE,
          details: `${query.metric} has not been observed for "${query.ref.service}" yet`,
        })
      // A stale decision still answers with its last value, never zero on missing data: its conditions say so.
      cb(null, {
        metricValues: [
          {
            metricName: call.request.metricName || metricName(query.ref, query.metric),
            metricValue: Math.round(value),
            metricValueFloat: value,
          },
        ],
      })
    },
  }

  const server = new grpc.Server({ 'grpc.max_receive_message_length': 64 * 1024 })
  server.addService(pkg.externalscaler.ExternalScaler.service, impl)
  const creds = opts.tls
    ? grpc.ServerCredentials.createSsl(
        opts.tls.clientCa ?? null,
        [{ private_key: opts.tls.key, cert_chain: opts.tls.cert }],
        Boolean(opts.tls.clientCa),
      )
    : grpc.ServerCredentials.createInsecure()
  const port = await new Promise<number>((ok, fail) =>
    server.bindAsync(`${opts.host ?? '0.0.0.0'}:${opts.port ?? DEFAULT_KEDA_PORT}`, creds, (err, p) =>
      err ? fail(err) : ok(p),
    ),
  )
  return {
    port,
    close: () =>
      new Promise<void>((ok) => {
        for (const finish of [...streams]) finish()
        server.tryShutdown(() => ok())
      }),
  }
}
