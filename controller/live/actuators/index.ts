import type { ActuatorConfig, ControllerTargetConfig } from '../../../collector/index.js'
import { createAgentActuator } from './agent.js'
import { createKubernetesActuator } from './kubernetes.js'
import { createModelServerActuator } from './model-server.js'
import { createProcessActuator } from './process.js'
import { createTritonActuator } from './triton.js'
import { createWebhookActuator } from './webhook.js'
import type { Actuator, Knob } from './types.js'

export type {
  Actuator,
  ActuatorChange,
  ActuatorContext,
  ActuatorReading,
  AdmissionCaps,
  ApplyResult,
  Knob,
  ReadResult,
} from './types.js'
export { createAgentActuator } from './agent.js'
export type { AgentActuatorOptions } from './agent.js'
export { createModelServerActuator, putBatching, parseBatching } from './model-server.js'
export type { ModelServerActuatorOptions } from './model-server.js'
export { createTritonActuator } from './triton.js'
export type { TritonActuatorOptions } from './triton.js'
export { createKubernetesActuator, SERVICE_ACCOUNT_DIR } from './kubernetes.js'
export type { KubernetesActuatorOptions } from './kubernetes.js'
export { createProcessActuator } from './process.js'
export type { ProcessActuatorOptions } from './process.js'
export { createReplicaSetActuator } from './replica-set.js'
export type { ReplicaSet, ReplicaSetActuatorOptions } from './replica-set.js'
export { createWebhookActuator } from './webhook.js'
export type { WebhookActuatorOptions } from './webhook.js'

/**
 * Builds a target's actuator from its config entry. Tokens left out of the file come from the environment
 * (`TAILGUARD_AGENT_ADMIN_TOKEN` for the agent, `TAILGUARD_MODEL_SERVER_TOKEN` for model servers).
 *
 * @example createActuator({ type: 'agent', url: 'http://127.0.0.1:4318' }, target, process.env)
 */
export function createActuator(
  a: ActuatorConfig,
  target: ControllerTargetConfig,
  env: NodeJS.ProcessEnv,
  onEvent?: (line: string) => void,
): Actuator {
  const agentToken = env['TAILGUARD_AGENT_ADMIN_TOKEN']
  const modelToken = env['TAILGUARD_MODEL_SERVER_TOKEN']
  switch (a.type) {
    case 'agent':
      return createAgentActuator({
        url: a.url,
        ...((a.token ?? agentToken) ? { token: (a.token ?? agentToken)! } : {}),
        ...(a.queueTimeoutMs !== undefined ? { queueTimeoutMs: a.queueTimeoutMs } : {}),
      })
    case 'model-server':
      return createModelServerActuator({
        urls: a.urls,
        ...((a.token ?? modelToken) ? { token: (a.token ?? modelToken)! } : {}),
      })
    case 'triton':
      return createTritonActuator({ url: a.url, model: a.model })
    case 'kubernetes':
      return createKubernetesActuator({
        kind: a.kind,
        namespace: a.namespace,
        name: a.name,
        ...(a.apiServer ? { apiServer: a.apiServer } : {}),
        ...(a.tokenFile ? { tokenFile: a.tokenFile } : {}),
        ...(a.caFile ? { caFile: a.caFile } : {}),
        env,
      })
    case 'process':
      return createProcessActuator({
        command: a.command,
        basePort: a.basePort,
        ...(a.env ? { replicaEnv: a.env } : {}),
        ...(a.host ? { host: a.host } : {}),
        ...(a.agentUrl ? { agentUrl: a.agentUrl } : {}),
        ...((a.agentToken ?? agentToken) ? { agentToken: (a.agentToken ?? agentToken)! } : {}),
        ...(a.batching ? { batching: true } : {}),
        ...(modelToken ? { batchingToken: modelToken } : {}),
        ...(a.healthPath !== undefined ? { healthPath: a.healthPath } : {}),
        ...(a.readyTimeoutMs !== undefined ? { readyTimeoutMs: a.readyTimeoutMs } : {}),
        ...(a.drainGraceMs !== undefined ? { drainGraceMs: a.drainGraceMs } : {}),
        ...(onEvent ? { onEvent } : {}),
      })
    case 'webhook': {
      // A webhook drives whatever knobs of the target no other actuator drives.
      const others = new Set<Knob>(
        target.actuators
          .filter((x) => x !== a)
          .flatMap((x) => KNOBS_OF[x.type as Exclude<ActuatorConfig['type'], 'webhook'>] ?? []),
      )
      return createWebhookActuator({
        url: a.url,
        ...(a.secret ? { secret: a.secret } : {}),
        ...(a.timeoutMs !== undefined ? { timeoutMs: a.timeoutMs } : {}),
        knobs: target.knobs.filter((k) => !others.has(k)),
      })
    }
  }
}

const KNOBS_OF: Readonly<Record<Exclude<ActuatorConfig['type'], 'webhook'>, readonly Knob[]>> = {
  agent: ['admission'],
  'model-server': ['batching'],
  triton: ['batching'],
  kubernetes: ['replicas'],
  process: ['replicas', 'batching'],
}
