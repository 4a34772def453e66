/* eslint-disable @typescript-eslint/no-explicit-any -- manifests and gRPC messages are untyped JSON */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { packageRoot } from '../../collector/index.js'
import { createRecommendationBoard, EXTERNAL_SCALER_PROTO, startKedaScaler } from '../../controller/index.js'
import { recommendation } from '../controller/autoscale/fixtures.js'

const load = (file: string): any[] =>
  parseAllDocuments(readFileSync(join(packageRoot(), 'deploy', file), 'utf8')).map((d) => d.toJS())

describe('deploy/keda-scaledobject.yaml', () => {
  it('names the scaler address the controller serves and metadata the server accepts', async () => {
    const docs = load('keda-scaledobject.yaml')
    const so = docs.find((d) => d.kind === 'ScaledObject')
    const auth = docs.find((d) => d.kind === 'TriggerAuthentication')
    const trigger = so.spec.triggers.find((t: any) => t.type === 'external')
    expect(trigger.authenticationRef.name).toBe(auth.metadata.name)

    // The address: the controller's Service, on the port its container passes to --keda-port.
    const controller = load('controller.yaml')
    const service = controller.find((d) => d.kind === 'Service')
    const deployment = controller.find((d) => d.kind === 'Deployment')
    const args: string[] = deployment.spec.template.spec.containers[0].args
    const kedaPort = Number(args[args.indexOf('--keda-port') + 1])
    const [host, port] = String(trigger.metadata.scalerAddress).split(':')
    expect(host).toBe(`${service.metadata.name}.${so.metadata.namespace}.svc`)
    expect(service.spec.ports.some((p: any) => p.port === Number(port) && p.targetPort === 'keda-grpc')).toBe(
      true,
    )
    expect(Number(port)).toBe(kedaPort)

    // The token: the TriggerAuthentication maps the Secret key the controller reads to authToken.
    const ref = auth.spec.secretTargetRef.find((r: any) => r.parameter === 'authToken')
    const secret = load('secrets.example.yaml').find(
      (d) => d.kind === 'Secret' && d.metadata.name === ref.name,
    )
    const token: string = secret.stringData[ref.key]
    expect(ref.key).toBe('TAILGUARD_READ_TOKEN')

    // KEDA sends the trigger's metadata (scalerAddress included) plus the resolved auth parameters.
    const board = createRecommendationBoard()
    board.publish(recommendation({ ref: { service: trigger.metadata.service }, desiredReplicas: 6 }))
    const scaler = await startKedaScaler({ source: board, tokens: [token], host: '127.0.0.1', port: 0 })
    const def = protoLoader.loadSync(EXTERNAL_SCALER_PROTO(), {
      keepCase: true,
      longs: Number,
      defaults: true,
    })
    const pkg = grpc.loadPackageDefinition(def) as any
    const client = new pkg.externalscaler.ExternalScaler(
      `127.0.0.1:${scaler.port}`,
      grpc.credentials.createInsecure(),
    )
    const refMsg = {
      name: so.metadata.name,
      namespace: so.metadata.namespace,
      scalerMetadata: { ...trigger.metadata, authToken: token },
    }
    const call = (method: string, req: unknown) =>
      new Promise<any>((ok, fail) =>
        client[method](req, (err: unknown, res: unknown) => (err ? fail(err) : ok(res))),
      )
    try {
      const spec = await call('GetMetricSpec', refMsg)
      const metrics = await call('GetMetrics', {
        scaledObjectRef: refMsg,
        metricName: spec.metricSpecs[0].metricName,
      })
      expect(Math.ceil(metrics.metricValues[0].metricValueFloat / spec.metricSpecs[0].targetSizeFloat)).toBe(
        6,
      )
      expect(await call('IsActive', refMsg)).toEqual({ result: true })
    } finally {
      client.close()
      await scaler.close()
    }
  })
})
