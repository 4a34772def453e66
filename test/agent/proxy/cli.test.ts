import { afterEach, describe, expect, it } from 'vitest'
import { proxyAgentArgs, spawnCli } from '../../helpers/cli.js'
import type { CliProcess } from '../../helpers/cli.js'

const procs: CliProcess[] = []
afterEach(async () => {
  for (const p of procs.splice(0)) await p.kill()
})

const env = {
  TAILGUARD_AGENT_TOKEN: 'agent-token-0123456789',
  TAILGUARD_AGENT_ADMIN_TOKEN: 'admin-token-0123456789',
}

describe('tailguard serve-model + tailguard agent --proxy-port (CLI end to end)', () => {
  it('proxies completions to the reference server, streams SSE, and serves the setpoints API', async () => {
    const model = spawnCli(['serve-model', '--port', '0', '--hidden', '64', '--log-level', 'fatal'])
    procs.push(model)
    const [, modelUrl] = await model.waitFor(/on (http:\/\/\S+)/)
    const agent = spawnCli(proxyAgentArgs(modelUrl!, 'http://127.0.0.1:9'), env)
    procs.push(agent)
    const [, proxyPort] = await agent.waitFor(/proxy on http:\/\/[^:]+:(\d+)/)
    const [, apiPort] = await agent.waitFor(/setpoints API on http:\/\/[^:]+:(\d+)/)
    const res = await fetch(`http://127.0.0.1:${proxyPort}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tailguard-priority': '0' },
      body: JSON.stringify({ model: 'tailguard-mlp', prompt: 'Hi', max_tokens: 3, stream: true }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-request-id')).toBeTruthy()
    const text = await res.text()
    expect(text.match(/^data: /gm)!.length).toBe(5) // 3 tokens, the finish event, [DONE]
    const sp = await fetch(`http://127.0.0.1:${apiPort}/v1/setpoints`, {
      headers: { authorization: `Bearer ${env.TAILGUARD_AGENT_ADMIN_TOKEN}` },
    })
    expect(sp.status).toBe(200)
    expect(((await sp.json()) as { source: string }).source).toBe('config')
    const metrics = await (await fetch(`http://127.0.0.1:${apiPort}/metrics`)).text()
    expect(metrics).toMatch(/tailguard_proxy_requests_total\{outcome="ok"\} 1/)
  }, 60_000)

  it('refuses --proxy-port without an upstream, naming the flag', async () => {
    const agent = spawnCli(['agent', '--proxy-port', '8080', '--no-nvml'], env)
    procs.push(agent)
    expect(await agent.exited).not.toBe(0)
    expect(agent.output()).toMatch(/--proxy-port needs at least one --upstream/)
  })
})
