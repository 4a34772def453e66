import { describe, expect, it } from 'vitest'
import { parseConfigText, resolveConfig } from '../../collector/config/index.js'
import { ConfigInvalid } from '../../collector/errors.js'
import { grpcPortFlag, otlpGrpcPortOf } from '../../agent/index.js'

// Which OTLP/gRPC port an agent listens on: config `agent.otlpGrpcPort`, flags `--otlp-grpc-port` and
// `--no-otlp-grpc`, and the default (4317, or a free port when the OTLP/HTTP port is 0).
const agentOf = (yaml: string, flags: Parameters<typeof grpcPortFlag>[0] = {}) =>
  resolveConfig({
    file: parseConfigText(yaml, 'tailguard.yaml'),
    fileName: 'tailguard.yaml',
    flags: { agent: grpcPortFlag(flags) },
  }).agent

describe('OTLP/gRPC port', () => {
  it('defaults to 4317, and to a free port when the OTLP/HTTP port is 0', () => {
    expect(otlpGrpcPortOf(agentOf('version: 1\n'))).toBe(4317)
    expect(otlpGrpcPortOf(agentOf('version: 1\nagent: { otlp: { port: 0 } }\n'))).toBe(0)
  })
  it('takes agent.otlpGrpcPort from the file; null turns the receiver off', () => {
    expect(otlpGrpcPortOf(agentOf('version: 1\nagent: { otlpGrpcPort: 14317 }\n'))).toBe(14317)
    expect(otlpGrpcPortOf(agentOf('version: 1\nagent: { otlpGrpcPort: 0, otlp: { port: 4318 } }\n'))).toBe(0)
    expect(otlpGrpcPortOf(agentOf('version: 1\nagent: { otlpGrpcPort: null }\n'))).toBeNull()
  })
  it('flags override the file', () => {
    const yaml = 'version: 1\nagent: { otlpGrpcPort: 14317 }\n'
    expect(otlpGrpcPortOf(agentOf(yaml, { otlpGrpcPort: 24317, otlpGrpc: true }))).toBe(24317)
    expect(otlpGrpcPortOf(agentOf(yaml, { otlpGrpc: false }))).toBeNull()
    expect(grpcPortFlag({ otlpGrpc: true })).toEqual({})
  })
  it('names the file, line and field of a bad port', () => {
    expect(() => agentOf('version: 1\nagent:\n  otlpGrpcPort: 70000\n')).toThrow(ConfigInvalid)
    expect(() => agentOf('version: 1\nagent:\n  otlpGrpcPort: 70000\n')).toThrow(
      /tailguard\.yaml:3: agent\.otlpGrpcPort/,
    )
  })
})
