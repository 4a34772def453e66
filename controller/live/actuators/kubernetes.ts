import { readFileSync } from 'node:fs'
import { describeFailure, httpJson } from '../http.js'
import type { Actuator } from './types.js'

/** Where the in-cluster service-account credentials live. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'

/** Options of {@link createKubernetesActuator}. */
export interface KubernetesActuatorOptions {
  readonly kind: 'Deployment' | 'StatefulSet'
  readonly namespace: string
  readonly name: string
  /** API server; default in-cluster `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`. */
  readonly apiServer?: string
  /** Bearer token file (re-read on every call: projected tokens rotate); default the service account's. */
  readonly tokenFile?: string
  /** CA bundle of the API server; default the service account's ca.crt (when present). */
  readonly caFile?: string
  readonly env?: NodeJS.ProcessEnv
  readonly timeoutMs?: number
}

/** An `autoscaling/v1` Scale as the API server answers it. */
interface Scale {
  apiVersion?: string
  kind?: string
  metadata?: { name?: string; namespace?: string; resourceVersion?: string }
  spec?: { replicas?: number }
  status?: { replicas?: number; selector?: string }
}

/**
 * Replica count through the `scale` subresource of a Deployment or StatefulSet
 * (`/apis/apps/v1/namespaces/{ns}/{deployments|statefulsets}/{name}/scale`, `autoscaling/v1` Scale JSON), as the
 * HPA does. A change is a PUT of the Scale read just before, carrying its `resourceVersion`, so a concurrent
 * change by anyone else makes the API server answer 409 instead of being overwritten. Ready replicas come
 * from the workload's `status.readyReplicas`. Plain HTTPS with the service-account token and CA: the
 * official client (`@kubernetes/client-node` 1.x) brings 16 runtime dependencies for these two calls, and 2.x
 * needs undici 8 and @types/node 26.
 *
 * RBAC: `get` on the workload, `get` and `update` on its `scale` subresource.
 *
 * @example createKubernetesActuator({ kind: 'Deployment', namespace: 'llm', name: 'vllm' })
 */
export function createKubernetesActuator(o: KubernetesActuatorOptions): Actuator {
  const env = o.env ?? process.env
  const server =
    o.apiServer?.replace(/\/$/, '') ??
    (env['KUBERNETES_SERVICE_HOST']
      ? `https://${env['KUBERNETES_SERVICE_HOST']!.includes(':') ? `[${env['KUBERNETES_SERVICE_HOST']}]` : env['KUBERNETES_SERVICE_HOST']}:${env['KUBERNETES_SERVICE_PORT'] ?? '443'}`
      : null)
  const plural = o.kind === 'Deployment' ? 'deployments' : 'statefulsets'
  const path = `/apis/apps/v1/namespaces/${encodeURIComponent(o.namespace)}/${plural}/${encodeURIComponent(o.name)}`
  const tokenFile = o.tokenFile ?? (o.apiServer ? undefined : `${SERVICE_ACCOUNT_DIR}/token`)
  const caFile = o.caFile ?? (o.apiServer ? undefined : `${SERVICE_ACCOUNT_DIR}/ca.crt`)
  const creds = (): { token?: string; ca?: string } | { error: string } => {
    const out: { token?: string; ca?: string } = {}
    try {
      if (tokenFile) out.token = readFileSync(tokenFile, 'utf8').trim()
      if (caFile) out.ca = readFileSync(caFile, 'utf8')
    } catch (err) {
      return { error: `kubernetes credentials: ${(err as Error).message}` }
    }
    return out
  }
  const call = async (suffix: string, method = 'GET', body?: unknown) => {
    if (!server)
      return {
        ok: false as const,
        error: 'kubernetes: no apiServer and not in a cluster (KUBERNETES_SERVICE_HOST unset)',
      }
    const c = creds()
    if ('error' in c) return { ok: false as const, error: c.error }
    return httpJson(`${server}${path}${suffix}`, {
      method,
      ...(body !== undefined ? { body } : {}),
      ...(c.token ? { token: c.token } : {}),
      ...(c.ca ? { ca: c.ca } : {}),
      timeoutMs: o.timeoutMs ?? 10_000,
    })
  }
  const what = `${o.kind.toLowerCase()} ${o.namespace}/${o.name}`
  return {
    name: `kubernetes ${what}`,
    knobs: ['replicas'],
    async read() {
      const s = await call('/scale')
      if (!s.ok || s.status !== 200) return { ok: false, error: describeFailure(`GET ${what}/scale`, s) }
      const scale = s.json as Scale
      const desired = scale.spec?.replicas ?? 0
      const w = await call('')
      const ready =
        w.ok && w.status === 200
          ? ((w.json as { status?: { readyReplicas?: number } }).status?.readyReplicas ?? 0)
          : (scale.status?.replicas ?? 0)
      return {
        ok: true,
        reading: {
          replicas: { desired, ready: Math.min(ready, desired), starting: Math.max(0, desired - ready) },
        },
      }
    },
    async apply(change) {
      if (change.replicas === undefined) return { ok: true, detail: 'nothing to change' }
      const s = await call('/scale')
      if (!s.ok || s.status !== 200) return { ok: false, error: describeFailure(`GET ${what}/scale`, s) }
      const scale = s.json as Scale
      const next: Scale = {
        apiVersion: 'autoscaling/v1',
        kind: 'Scale',
        metadata: { ...scale.metadata },
        spec: { ...scale.spec, replicas: change.replicas },
      }
      const r = await call('/scale', 'PUT', next)
      if (!r.ok || r.status !== 200) return { ok: false, error: describeFailure(`PUT ${what}/scale`, r) }
      return { ok: true, detail: `spec.replicas ${scale.spec?.replicas ?? 0} → ${change.replicas}` }
    },
  }
}
