import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../../../collector/paths.js'
import { parseConfigText } from '../../../collector/config/index.js'
import { createTargetPolicy } from '../../../controller/index.js'

// Every ```yaml block of docs/controller.md is a config file that validates as written.
describe('docs/controller.md', () => {
  const text = readFileSync(join(packageRoot(), 'docs', 'controller.md'), 'utf8')
  const blocks = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!)
  it('has config examples', () => expect(blocks.length).toBeGreaterThanOrEqual(2))
  for (const [i, block] of blocks.entries())
    it(`yaml example ${i + 1} is a valid config with known policies`, () => {
      const cfg = parseConfigText(block, `docs/controller.md#yaml-${i + 1}`)
      for (const t of cfg.controllers ?? [])
        expect(createTargetPolicy(t.policy ?? 'hpa', t)).toMatchObject({ ok: true })
    })

  it('reports config problems with file, line and field', () => {
    const bad = `controllers:
  - name: chat
    service: chat
    slos: []
    objective: { thresholdMs: 200 }
    knobs: [replicas]
    bounds: { minReplicas: 4, maxReplicas: 2 }
    initial: { replicas: 3, windowMs: 5, maxBatch: 8, admission: [{ maxQueue: 1, maxConcurrency: 1 }] }
    actuators:
      - type: agent
        url: http://127.0.0.1:4318
`
    expect(() => parseConfigText(bad, 'bad.yaml')).toThrow(
      /bad\.yaml:7: controllers\.0\.bounds\.minReplicas: must be at most maxReplicas \(2\)[\s\S]*controllers\.0\.knobs: knob 'replicas' needs an actuator of type kubernetes, process, webhook/,
    )
    expect(() => parseConfigText(bad.replace('type: agent', 'type: agnet'), 'bad.yaml')).toThrow(
      /bad\.yaml:\d+: controllers\.0\.actuators\.0/,
    )
  })
})
