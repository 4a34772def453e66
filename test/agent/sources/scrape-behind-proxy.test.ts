import { describe, expect, it } from 'vitest'
import { CONFIG_DEFAULTS } from '../../../collector/index.js'
import { behindProxy } from '../../../agent/run.js'

const labels = { service: 'step-llm', model: '', version: '1', replica: 'r0' }
const cfg = (port: number | null, upstreams: string[]) => ({
  id: 'agent-1',
  proxy: { ...CONFIG_DEFAULTS.agent.proxy, port, upstreams, labels },
})

describe('a scraped server behind the agent’s proxy', () => {
  it('takes the proxy’s service, version and (with one upstream) replica', () => {
    expect(
      behindProxy({ url: 'http://127.0.0.1:8000/metrics' }, cfg(8080, ['http://127.0.0.1:8000'])),
    ).toEqual({
      proxied: true,
      service: 'step-llm',
      version: '1',
      replica: 'r0',
    })
  })
  it('keeps its replica per server when the proxy has several upstreams', () => {
    expect(
      behindProxy(
        { url: 'http://127.0.0.1:8001/metrics' },
        cfg(8080, ['http://127.0.0.1:8000', 'http://127.0.0.1:8001/']),
      ),
    ).toEqual({ proxied: true, service: 'step-llm', version: '1' })
  })
  it('inherits nothing from a proxy that does not forward to it, or when there is no proxy', () => {
    expect(
      behindProxy({ url: 'http://127.0.0.1:9000/metrics' }, cfg(8080, ['http://127.0.0.1:8000'])),
    ).toEqual({})
    expect(
      behindProxy({ url: 'http://127.0.0.1:8000/metrics' }, cfg(null, ['http://127.0.0.1:8000'])),
    ).toEqual({})
  })
})
