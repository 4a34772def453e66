import { describeFailure, httpJson } from '../http.js'
import { parseBatching, putBatching } from './model-server.js'
import type { Actuator } from './types.js'

/**
 * Replicas of the reference model server that live in this process's reach (the demo of `tailguard start`:
 * each a `serve-model` process behind its own proxy): what {@link createReplicaSetActuator} drives.
 *
 * @example const set: ReplicaSet = servingDemo // startServingDemo's answer is one
 */
export interface ReplicaSet {
  replicaCounts(): { readonly desired: number; readonly ready: number; readonly starting: number }
  /** The model servers of the replicas that take traffic now (each serves `/v1/batching`). */
  readonly modelUrls: readonly string[]
  /** Starts replicas up to `n` or drains the newest down to `n`; says what it did. */
  scaleTo(n: number): string
  /** Runs `prepare(modelUrl)` on each new replica's model server before it takes traffic. */
  onStarting(prepare: (modelUrl: string) => Promise<void>): void
}

/** Options of {@link createReplicaSetActuator}. */
export interface ReplicaSetActuatorOptions {
  /** For outcomes and logs (default `replica set`). */
  readonly name?: string
  /** The model servers' admin token for `/v1/batching`, when they need one. */
  readonly batchingToken?: string
}

/**
 * Replicas and batching of a {@link ReplicaSet}: scaling starts or drains replicas, the batching window and max
 * batch go to every ready replica (contract 3), and a replica that starts later gets the batching in force
 * before it takes traffic. `tailguard start` drives its serving demo through it.
 *
 * @example createReplicaSetActuator(servingDemo, { name: 'demo replicas' })
 */
export function createReplicaSetActuator(set: ReplicaSet, o: ReplicaSetActuatorOptions = {}): Actuator {
  let batching: { windowMs: number; maxBatch: number } | null = null
  set.onStarting(async (url) => {
    if (batching) await putBatching([url], batching, o.batchingToken)
  })
  return {
    name: o.name ?? 'replica set',
    knobs: ['replicas', 'batching'],
    async read() {
      const replicas = set.replicaCounts()
      if (!batching) {
        const url = set.modelUrls[0]
        if (url) {
          const r = await httpJson(`${url.replace(/\/$/, '')}/v1/batching`, {
            ...(o.batchingToken ? { token: o.batchingToken } : {}),
            timeoutMs: 5000,
          })
          const b = r.ok && r.status === 200 ? parseBatching(r.json) : null
          if (!b) return { ok: false, error: describeFailure('GET /v1/batching', r) }
          batching = b
        }
      }
      return { ok: true, reading: { replicas, ...(batching ? { batching } : {}) } }
    },
    async apply(change) {
      const notes: string[] = []
      if (change.batching) {
        batching = { ...change.batching }
        const urls = set.modelUrls
        const b = await putBatching(urls, batching, o.batchingToken)
        if (!b.ok) return b
        notes.push(
          `batching window ${batching.windowMs} ms, max batch ${batching.maxBatch} on ${urls.length} replica(s)`,
        )
      }
      if (change.replicas !== undefined) {
        try {
          notes.push(set.scaleTo(change.replicas))
        } catch (err) {
          return { ok: false, error: (err as Error).message }
        }
      }
      return { ok: true, detail: notes.join('; ') || 'nothing to change' }
    },
  }
}
