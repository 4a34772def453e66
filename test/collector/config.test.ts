import { describe, expect, it } from 'vitest'
import { CONFIG_DEFAULTS, parseConfigText, resolveConfig } from '../../collector/config/index.js'

/** The message parseConfigText throws for `text` ('' when it parses). */
function problemsOf(text: string, file: string): string {
  try {
    parseConfigText(text, file)
    return ''
  } catch (err) {
    return (err as Error).message
  }
}

describe('config', () => {
  it('fills every section from defaults and takes partial nested sections', () => {
    const file = parseConfigText(
      'version: 1\nagent:\n  gpu: { periodMs: 500 }\n  otlp: { port: 4400 }\n  mapping: { labels: { replica: [k8s.pod.name] } }\n',
      'x.yaml',
    )
    const cfg = resolveConfig({ file })
    expect(cfg.agent.gpu).toEqual({ ...CONFIG_DEFAULTS.agent.gpu, periodMs: 500 })
    expect(cfg.agent.otlp).toEqual({ ...CONFIG_DEFAULTS.agent.otlp, port: 4400 })
    expect(cfg.agent.mapping).toEqual({ labels: { replica: ['k8s.pod.name'] } })
    expect(cfg.collector).toEqual(CONFIG_DEFAULTS.collector)
    expect(cfg.agent.node).not.toBe('')
    expect(cfg.agent.id).toBe(cfg.agent.node)
    expect(Object.isFrozen(cfg.agent.otlp)).toBe(true)
  })

  it('takes defaults < file < environment < flags', () => {
    const file = parseConfigText(
      'collector:\n  port: 8000\n  db: file.db\nagent:\n  token: from-file\n',
      'x.yaml',
    )
    const env = {
      TAILGUARD_DB: 'env.db',
      TAILGUARD_AGENT_TOKEN: 'from-env-token-0123456789',
      TAILGUARD_API_TOKEN: 'a'.repeat(20),
      TAILGUARD_READ_TOKEN: 'r'.repeat(20),
    }
    const cfg = resolveConfig({ file, env, flags: { collector: { port: 9000 } } })
    expect(cfg.collector.port).toBe(9000)
    expect(cfg.collector.db).toBe('env.db')
    expect(resolveConfig({ file, env, flags: { collector: { db: 'flag.db' } } }).collector.db).toBe('flag.db')
    expect(cfg.agent.token).toBe('from-env-token-0123456789')
    expect(cfg.collector.apiTokens.map((t) => t.scope)).toEqual(['admin', 'read'])
    expect(cfg.collector.agentTokens).toHaveLength(1)
  })

  it('reports every problem with file, line and field', () => {
    const text = [
      'version: 1',
      'collector:',
      '  port: 99999',
      '  webhooks:',
      '    - name: pager',
      '      url: ftp://nope',
      '  retention: { 5s: 1d }',
      'agent:',
      '  mapping:',
      '    spanNamePhases: { infer: warp }',
      'start:',
      '  demoSpeed: -1',
    ].join('\n')
    const message = problemsOf(text, 'bad.yaml')
    expect(message).toContain(
      'bad.yaml:3: collector.port: Expected integer to be less or equal to 65535 (got 99999)',
    )
    expect(message).toMatch(
      /bad\.yaml:6: collector\.webhooks\.0\.url: Expected string to match '\^https\?:\/\/' \(got "ftp:\/\/nope"\)/,
    )
    expect(message).toContain('bad.yaml:7: collector.retention.5s: unknown field')
    expect(message).toMatch(/bad\.yaml:10: agent\.mapping\.spanNamePhases\.infer: .*\(got "warp"\)/)
    expect(message).toMatch(/bad\.yaml:12: start\.demoSpeed: .*\(got -1\)/)
  })

  it('names the accepted values when a value matches none of a union', () => {
    const text = [
      'version: 1',
      'collector:',
      '  ingestWorkers: many',
      '  apiTokens: [{ token: abcdefghijklmnopqrstu, scope: god }]',
      '  slos: 3',
    ].join('\n')
    const message = problemsOf(text, 'u.yaml')
    expect(message).toContain(
      'u.yaml:3: collector.ingestWorkers: expected an integer 0-64 or "auto" (got "many")',
    )
    expect(message).toContain('u.yaml:4: collector.apiTokens.0.scope: expected "read" or "admin" (got "god")')
    expect(message).toContain('u.yaml:5: collector.slos: expected a string or null (got 3)')
    expect(message).not.toContain('union value')
    expect(resolveConfig({}).collector.ingestWorkers).toBe('auto')
    expect(resolveConfig({ flags: { collector: { ingestWorkers: 2 } } }).collector.ingestWorkers).toBe(2)
  })

  it('reports an actuator by its type: the misspelt type, or the fields wrong for that type', () => {
    const target = (actuators: string[]) =>
      [
        'controllers:',
        '  - name: chat',
        '    service: chat',
        '    slos: []',
        '    objective: { thresholdMs: 2000 }',
        '    knobs: [replicas]',
        '    bounds: { minReplicas: 1, maxReplicas: 3 }',
        '    initial: { replicas: 1, windowMs: 5, maxBatch: 16, admission: [{ maxQueue: 8, maxConcurrency: 4 }] }',
        '    actuators:',
        ...actuators,
      ].join('\n')
    const misspelt = problemsOf(target(['      - { type: proces, command: [x], basePort: 9100 }']), 'a.yaml')
    expect(misspelt).toContain(
      'a.yaml:10: controllers.0.actuators.0.type: expected one of "agent", "model-server", "triton", "kubernetes", "process", "webhook" (got "proces"; did you mean "process"?)',
    )
    expect(problemsOf(target(['      - { command: [x], basePort: 9100 }']), 'a.yaml')).toContain(
      'controllers.0.actuators.0.type: expected one of "agent",',
    )
    const fields = problemsOf(
      target(['      - type: process', '        command: [x]', '        basePort: 0', '        bogus: 1']),
      'a.yaml',
    )
    expect(fields).toContain(
      'a.yaml:12: controllers.0.actuators.0.basePort: Expected integer to be greater or equal to 1 (got 0)',
    )
    expect(fields).toContain(
      'a.yaml:13: controllers.0.actuators.0.bogus: unknown field (known: type, command,',
    )
    const env = (vars: string) =>
      target([
        '      - type: process',
        '        command: [x]',
        '        basePort: 9100',
        `        env: ${vars}`,
      ])
    expect(problemsOf(env("{ CUDA_VISIBLE_DEVICES: '{slot}' }"), 'a.yaml')).toBe('')
    expect(problemsOf(env('{ 1GPU: x }'), 'a.yaml')).toMatch(/a\.yaml:\d+: controllers\.0\.actuators\.0\.env/)
    // Not the union's members listed as "object, object, …".
    expect(fields).not.toMatch(/object, object/)
  })

  it('reports YAML syntax errors with their line', () => {
    expect(() => parseConfigText('collector:\n  port: [1\n', 'y.yaml')).toThrow(
      /y\.yaml:3: \(root\): YAML syntax/,
    )
  })

  it('rejects a flag value the schema refuses, naming the field', () => {
    expect(() => resolveConfig({ flags: { agent: { intervalMs: 5 } } })).toThrow(
      /agent\.intervalMs: Expected integer to be greater or equal to 100/,
    )
  })

  it('names the field a misspelt key meant, once, without the missing field it stands for', () => {
    const text = [
      'version: 1',
      'colector:',
      '  port: 7070',
      'controllers:',
      '  - name: chat',
      '    service: chat',
      '    slos: []',
      '    objective: { thresholdMs: 100 }',
      '    policy: aimd',
      '    knobs: [batching]',
      '    bounds: { minReplica: 1, maxReplicas: 4 }',
      '    initial: { replicas: 1, windowMs: 5, maxBatch: 32, admission: [{ maxQueue: 8, maxConcurrency: 4 }] }',
      '    actuators: [{ type: webhook, url: "http://127.0.0.1:9", secret: "0123456789abcdef0123" }]',
      '',
    ].join('\n')
    expect(problemsOf(text, 'k.yaml').split('\n')).toEqual([
      'k.yaml:2: colector: unknown field; did you mean "collector"?',
      'k.yaml:11: controllers.0.bounds.minReplica: unknown field; did you mean "minReplicas"?',
    ])
  })

  it('names where a bad value came from (file, flags or variable) and never prints a token back', () => {
    const message = (f: () => unknown) => {
      try {
        f()
        return ''
      } catch (err) {
        return (err as Error).message
      }
    }
    const inFile = problemsOf('version: 1\nagent:\n  adminToken: "my secret token"\n', 'at.yaml')
    expect(inFile).toMatch(
      /^at\.yaml:3: agent\.adminToken: expected a string of at least 16 characters with no spaces/,
    )
    expect(inFile).not.toContain('my secret')
    const fromEnv = message(() => resolveConfig({ env: { TAILGUARD_AGENT_ADMIN_TOKEN: 'short' } }))
    expect(fromEnv).toMatch(/^\(environment\): TAILGUARD_AGENT_ADMIN_TOKEN: expected a string of at least 16/)
    expect(fromEnv).not.toContain('short"')
    expect(message(() => resolveConfig({ env: { TAILGUARD_OTLP_TOKEN: 'x y' } }))).toMatch(
      /^\(environment\): TAILGUARD_OTLP_TOKEN: /,
    )
    const fromFlag = message(() =>
      resolveConfig({ fileName: 'ctl.yaml', flags: { controller: { collector: 'notaurl' } } }),
    )
    expect(fromFlag).toMatch(/^\(flags\): controller\.collector: /)
  })
})
