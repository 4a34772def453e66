import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { createRecorder, createProxy, PROXY_DEFAULTS } from '../../../agent/index.js'
import type { Proxy, ProxyOptions, Recorder } from '../../../agent/index.js'

export const LABELS = { service: 'chat', model: '', version: '1', replica: 'r0', node: 'n0' }

/** A real HTTP server on 127.0.0.1:0 with the given handler. */
export async function upstream(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

/** A proxy on 127.0.0.1:0 in front of `urls`, recording into a fresh recorder. */
export async function proxyTo(
  urls: string[],
  overrides: Partial<ProxyOptions> = {},
): Promise<{ proxy: Proxy; recorder: Recorder; url: string; port: number }> {
  const recorder = createRecorder()
  const proxy = createProxy(
    { ...PROXY_DEFAULTS, host: '127.0.0.1', port: 0, upstreams: urls, labels: LABELS, ...overrides },
    { sink: recorder },
  )
  const { port } = await proxy.listen()
  return { proxy, recorder, url: `http://127.0.0.1:${port}`, port }
}
