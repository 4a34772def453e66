import { readFileSync } from 'node:fs'
import { CliError, listening } from '../../collector/index.js'
import type { PortClaim, TokenEntry } from '../../collector/index.js'
import { buildExternalMetricsApp, DEFAULT_EXTERNAL_METRICS_PORT } from '../autoscale/external-metrics.js'
import { buildAutoscaleHttp, DEFAULT_CONTROLLER_HTTP_PORT } from '../autoscale/http.js'
import { DEFAULT_KEDA_PORT, startKedaScaler } from '../autoscale/keda-server.js'
import type { GrpcTls } from '../autoscale/keda-server.js'
import type { AutoscaleSource } from '../autoscale/recommendation.js'

/** The `tailguard controller` flags of the autoscaler front ends. */
export interface AutoscaleFlags {
  readonly host?: string
  readonly kedaPort?: number
  readonly keda: boolean
  readonly httpPort?: number
  readonly http: boolean
  readonly externalMetricsPort?: number
  readonly tlsCert?: string
  readonly tlsKey?: string
  readonly tlsClientCa?: string
}

/** The running front ends: the lines to print and how to stop them. */
export interface AutoscaleFronts {
  readonly lines: readonly string[]
  close(): Promise<void>
}

/**
 * The read-scope tokens the front ends accept: TAILGUARD_READ_TOKEN and TAILGUARD_API_TOKEN (admin).
 *
 * @example autoscaleTokens(process.env) // [{ token: '…', scope: 'read' }]
 */
export function autoscaleTokens(env: NodeJS.ProcessEnv): TokenEntry[] {
  const out: TokenEntry[] = []
  if (env['TAILGUARD_READ_TOKEN'])
    out.push({ token: env['TAILGUARD_READ_TOKEN'], scope: 'read', name: 'env:read' })
  if (env['TAILGUARD_API_TOKEN'])
    out.push({ token: env['TAILGUARD_API_TOKEN'], scope: 'admin', name: 'env:admin' })
  return out
}

const hostOf = (f: AutoscaleFlags) => f.host ?? '0.0.0.0'
const withTls = (f: AutoscaleFlags) => f.tlsCert !== undefined || f.tlsKey !== undefined
/** True when a flag asked for a front end by name (then a missing token is an error, not a quiet "off"). */
const explicit = (f: AutoscaleFlags) =>
  f.kedaPort !== undefined || f.httpPort !== undefined || f.externalMetricsPort !== undefined || withTls(f)

/**
 * The ports the front ends will listen on, for the busy-port check before anything starts.
 *
 * @example await assertPortsFree(autoscalePortClaims(flags))
 */
export function autoscalePortClaims(f: AutoscaleFlags, tokens: readonly TokenEntry[]): PortClaim[] {
  if (tokens.length === 0 && !f.tlsClientCa && !explicit(f)) return []
  const host = hostOf(f)
  return [
    ...(f.keda ? [{ host, port: f.kedaPort ?? DEFAULT_KEDA_PORT, flag: '--keda-port' }] : []),
    ...(f.http ? [{ host, port: f.httpPort ?? DEFAULT_CONTROLLER_HTTP_PORT, flag: '--http-port' }] : []),
    ...(withTls(f)
      ? [
          {
            host,
            port: f.externalMetricsPort ?? DEFAULT_EXTERNAL_METRICS_PORT,
            flag: '--external-metrics-port',
          },
        ]
      : []),
  ]
}

function readPem(file: string, flag: string): Buffer {
  try {
    return readFileSync(file)
  } catch (err) {
    throw new CliError(`${flag}: cannot read ${file}: ${(err as Error).message}`)
  }
}

/**
 * Starts the KEDA external scaler, the JSON autoscale API and (with a TLS certificate) the Kubernetes external
 * metrics API on one recommendation source. Without any token and without a client CA nothing would be
 * authenticated: then they stay off (with a line saying so), or, when a flag named one, that is an error.
 *
 * @example const fronts = await startAutoscaleFronts(flags, board, autoscaleTokens(process.env))
 */
export async function startAutoscaleFronts(
  f: AutoscaleFlags,
  source: AutoscaleSource,
  tokens: readonly TokenEntry[],
): Promise<AutoscaleFronts> {
  if (f.externalMetricsPort !== undefined && !withTls(f))
    throw new CliError(
      '--external-metrics-port: the external metrics API is served over HTTPS: give --tls-cert and --tls-key',
    )
  if (withTls(f) && (f.tlsCert === undefined || f.tlsKey === undefined))
    throw new CliError('--tls-cert and --tls-key go together')
  const tls: GrpcTls | undefined = withTls(f)
    ? {
        cert: readPem(f.tlsCert!, '--tls-cert'),
        key: readPem(f.tlsKey!, '--tls-key'),
        ...(f.tlsClientCa ? { clientCa: readPem(f.tlsClientCa, '--tls-client-ca') } : {}),
      }
    : undefined
  const anyFront = f.keda || f.http || tls !== undefined
  if (anyFront && tokens.length === 0 && !tls?.clientCa) {
    // Never serve them unauthenticated: off, and say so; an error only when a flag asked for one by name.
    if (!explicit(f))
      return {
        lines: [
          'autoscaler APIs (KEDA, JSON) off: set TAILGUARD_READ_TOKEN or TAILGUARD_API_TOKEN to serve them',
        ],
        close: async () => undefined,
      }
    throw new CliError(
      'the autoscaler APIs need a token: set TAILGUARD_READ_TOKEN (or TAILGUARD_API_TOKEN), or give --tls-client-ca; or turn them off with --no-keda --no-http',
    )
  }
  const host = hostOf(f)
  const lines: string[] = []
  const closers: Array<() => Promise<void>> = []
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined)
  }
  try {
    if (f.keda) {
      const claim = { host, port: f.kedaPort ?? DEFAULT_KEDA_PORT, flag: '--keda-port' }
      const keda = await listening(claim, () =>
        startKedaScaler({
          source,
          tokens: tokens.map((t) => t.token),
          ...(tls ? { tls } : {}),
          host,
          port: claim.port,
        }),
      )
      closers.push(() => keda.close())
      lines.push(`KEDA external scaler (gRPC${tls ? ', TLS' : ''}) on ${host}:${keda.port}`)
    }
    if (f.http) {
      const claim = { host, port: f.httpPort ?? DEFAULT_CONTROLLER_HTTP_PORT, flag: '--http-port' }
      const app = await buildAutoscaleHttp({ source, tokens })
      await listening(claim, () => app.listen({ host, port: claim.port }))
      closers.push(() => app.close())
      lines.push(
        `autoscale API on http://${host}:${(app.server.address() as { port: number }).port}/api/v1/autoscale/{service}`,
      )
    }
    if (tls) {
      const claim = {
        host,
        port: f.externalMetricsPort ?? DEFAULT_EXTERNAL_METRICS_PORT,
        flag: '--external-metrics-port',
      }
      const app = buildExternalMetricsApp({ source, tokens: tokens.map((t) => t.token), tls })
      await listening(claim, () => app.listen({ host, port: claim.port }))
      closers.push(() => app.close())
      lines.push(
        `external metrics API (external.metrics.k8s.io/v1beta1) on https://${host}:${(app.server.address() as { port: number }).port}`,
      )
    }
  } catch (err) {
    await close()
    throw err
  }
  return { lines, close }
}
