import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CLI, proxyAgentArgs } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'
import {
  childPids,
  cpuSeconds,
  openLoop,
  quantile,
  spawnNode,
  stop,
  STUB_COLLECTOR,
  waitListening,
} from './load.js'
import type { Bench } from './table.js'

// Added latency of the proxy, side by side in one run: open-loop fixed-rate GETs (250, 1k, 2k, 4k req/s) against
// a tiny upstream (a node http server answering 2 bytes), sent directly, through `tailguard agent
// --proxy-port` (the real CLI, in its own process) and through nginx (Debian's, started here with a temp
// config on a loopback port, upstream keepalive on, buffering off as for streaming). Each rate's step runs in
// rounds that interleave the paths; added p50/p99 = the median over rounds of the path's percentile minus the
// direct path's in the same round. CPU: the proxy process's user+system
// time over the step, as % of one core per 1k req/s. tailguard runs twice: as it starts by default, and with
// NODE_OPTIONS=--max-semi-space-size=64 (docs/proxy.md: a larger young generation, so fewer scavenges land in a
// request's path), each in its own process. `node floor`, the least a Node proxy can do per request (NODE_FLOOR
// below), shows in the same run how much of the overhead is the runtime's, and `node floor http` (the same behind
// node:http) how much of it Node's HTTP server is.

const RATES = [250, 1000, 2000, 4000]
const DURATION_MS = Number(process.env.TG_BENCH_PROXY_MS ?? 9000)
/** Each rate's step is split into this many rounds that interleave the paths (`TG_BENCH_PROXY_ROUNDS`). */
const ROUNDS = Math.max(1, Number(process.env.TG_BENCH_PROXY_ROUNDS ?? 3))
const WARMUP_MS = 500
/** Before the first step, every path takes this long at 2k req/s: the agent's JIT compiles its hot path then. */
const FIRST_WARMUP_MS = Number(process.env.TG_BENCH_PROXY_WARMUP_MS ?? 4000)
/** The young-generation setting docs/proxy.md recommends for the proxy (MB per semi-space). */
const SEMI_SPACE_MB = 64

const UPSTREAM = `
import { createServer } from 'node:http'
const s = createServer((req, res) => {
  req.resume()
  if (req.url === '/sse') {
    // The first event 20 ms after the headers, carrying the monotonic time it was sent (ns).
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.flushHeaders()
    setTimeout(() => {
      res.write('data: ' + process.hrtime.bigint() + '\\n\\n')
      setTimeout(() => res.end('data: [DONE]\\n\\n'), 5)
    }, 20)
    return
  }
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }); res.end('ok')
})
s.keepAliveTimeout = 65000
s.listen(0, '127.0.0.1', () => console.log('listening ' + s.address().port))
process.on('SIGTERM', () => process.exit(0))
`

/**
 * The reference proxies' upstream side (below): keep-alive connections to the upstream on the port given as the
 * first argument, taken from an idle list (last in, first out) or opened; one the upstream closes while idle
 * (its keep-alive timeout) leaves the list. `endsWith(b, LAST_CHUNK)`: a chunked response ends with `b`.
 */
const UPSTREAM_POOL = `
const upstreamPort = Number(process.argv[1])
const HEAD_END = Buffer.from('\\r\\n\\r\\n')
const LAST_CHUNK = Buffer.from('0\\r\\n\\r\\n')
const endsWith = (b, tail) => b.length >= tail.length && b.subarray(b.length - tail.length).equals(tail)
const idle = []
function takeUpstream() {
  const up = idle.pop()
  if (up !== undefined) return up
  const s = connect(upstreamPort, '127.0.0.1')
  s.setNoDelay(true)
  s.on('error', () => {})
  s.on('close', () => {
    const i = idle.indexOf(s)
    if (i >= 0) idle.splice(i, 1)
  })
  return s
}`

/**
 * The least a Node proxy can do per request, as a reference for what the runtime itself costs: bare `net` on
 * both sides, the client's request head passed on as it came (GETs only, no body), a pool of keep-alive upstream
 * connections, the response framed by its `content-length` (or passed on until the last chunk of a chunked one)
 * and written back in one piece. No header rewriting, no measurement, no admission, no limits or timeouts: not a
 * proxy anyone should run, the floor under tailguard's overhead in the same run.
 */
const NODE_FLOOR = `
import { connect, createServer } from 'node:net'
${UPSTREAM_POOL}
function forward(client, head, done) {
  const up = takeUpstream()
  let buf = null
  let end = -1
  let chunked = false
  const finish = () => {
    up.off('data', onData)
    up.off('close', onClose)
    idle.push(up)
    done()
  }
  const onClose = () => client.destroy()
  const onData = (d) => {
    if (chunked) {
      client.write(d)
      if (endsWith(d, LAST_CHUNK)) finish()
      return
    }
    buf = buf === null ? d : Buffer.concat([buf, d])
    if (end < 0) {
      const i = buf.indexOf(HEAD_END)
      if (i < 0) return
      const m = /\\r\\ncontent-length: *(\\d+)/i.exec(buf.toString('latin1', 0, i))
      if (m === null) {
        chunked = true
        client.write(buf)
        if (endsWith(buf, LAST_CHUNK)) finish()
        return
      }
      end = i + 4 + Number(m[1])
    }
    if (buf.length >= end) {
      client.write(buf)
      finish()
    }
  }
  up.on('data', onData)
  up.on('close', onClose)
  up.write(head)
}
createServer((c) => {
  c.setNoDelay(true)
  let buf = null
  let busy = false
  const next = () => {
    busy = false
    if (buf === null) return
    const i = buf.indexOf(HEAD_END)
    if (i < 0) return
    const head = i + 4 === buf.length ? buf : buf.subarray(0, i + 4)
    buf = i + 4 === buf.length ? null : buf.subarray(i + 4)
    busy = true
    forward(c, head, next)
  }
  c.on('data', (d) => {
    buf = buf === null ? d : Buffer.concat([buf, d])
    if (!busy) next()
  })
  c.on('error', () => {})
}).listen(0, '127.0.0.1', function () {
  console.log('listening ' + this.address().port)
})
process.on('SIGTERM', () => process.exit(0))
`

/**
 * {@link NODE_FLOOR} with Node's HTTP server in front instead of bare `net` (the upstream side the same, the
 * response's head parsed into a header list for `writeHead`): the difference to the floor is what `node:http`
 * costs a proxy per request, i.e. the most a hand-written server side could save tailguard.
 */
const NODE_FLOOR_HTTP = `
import { connect } from 'node:net'
import { createServer } from 'node:http'
${UPSTREAM_POOL}
createServer((req, res) => {
  const up = takeUpstream()
  let buf = null
  let end = -1
  let status = 0
  let headers = null
  let bodyAt = 0
  let chunked = false
  // An event stream: its chunks are passed on as they are, the framing already in them.
  const passOn = (b) => {
    res.socket.write(b)
    if (endsWith(b, LAST_CHUNK)) {
      up.off('data', onData)
      idle.push(up)
      res.socket.end()
    }
  }
  const onData = (d) => {
    if (chunked) {
      passOn(d)
      return
    }
    buf = buf === null ? d : Buffer.concat([buf, d])
    if (end < 0) {
      const i = buf.indexOf(HEAD_END)
      if (i < 0) return
      const lines = buf.toString('latin1', 0, i).split('\\r\\n')
      status = Number(lines[0].slice(9, 12))
      headers = []
      let length = -1
      for (let k = 1; k < lines.length; k++) {
        const colon = lines[k].indexOf(':')
        const name = lines[k].slice(0, colon).toLowerCase()
        const value = lines[k].slice(colon + 1).trim()
        if (name === 'content-length') length = Number(value)
        if (name !== 'connection' && name !== 'keep-alive') headers.push(name, value)
      }
      if (length < 0) {
        chunked = true
        passOn(buf)
        return
      }
      bodyAt = i + 4
      end = bodyAt + length
    }
    if (buf.length >= end) {
      up.off('data', onData)
      idle.push(up)
      res.writeHead(status, headers)
      res.end(buf.subarray(bodyAt, end))
    }
  }
  up.on('data', onData)
  let head = req.method + ' ' + req.url + ' HTTP/1.1\\r\\n'
  const raw = req.rawHeaders
  for (let k = 0; k < raw.length; k += 2) head += raw[k] + ': ' + raw[k + 1] + '\\r\\n'
  up.write(head + '\\r\\n')
}).listen(0, '127.0.0.1', function () {
  console.log('listening ' + this.address().port)
})
process.on('SIGTERM', () => process.exit(0))
`

function nginxBinary(): string | null {
  for (const p of ['/usr/sbin/nginx', '/usr/bin/nginx', 'nginx']) {
    const r = spawnSync(p, ['-v'], { encoding: 'utf8' })
    if (r.status === 0) return p
  }
  return null
}

async function startNginx(
  bin: string,
  upstreamPort: number,
): Promise<{ child: ChildProcess; port: number; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-nginx-'))
  const port = await freePort()
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
daemon off;
master_process on;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream up { server 127.0.0.1:${upstreamPort}; keepalive 256; }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`,
  )
  const child = spawn(bin, ['-c', join(dir, 'nginx.conf'), '-p', dir, '-e', join(dir, 'error.log')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  // nginx prints nothing when it starts: poll the port.
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/`)
      await r.text()
      if (r.ok) return { child, port, dir }
    } catch {
      // Not up yet.
    }
    if (child.exitCode !== null) break
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error('nginx did not start')
}

/** One path's measurements at one rate, over the rounds. */
interface PathStep {
  /** Latencies of every answered request, ms. */
  all: number[]
  /** Each round's own percentiles, ms. */
  rounds: Array<{ p50: number; p99: number }>
  wallS: number
  cpuS: number
  loopP99: number
  loopMax: number
  deopts: number
  errors: number
}

function newStep(): PathStep {
  return { all: [], rounds: [], wallS: 0, cpuS: 0, loopP99: 0, loopMax: 0, deopts: 0, errors: 0 }
}

function median(values: readonly number[]): number {
  return quantile(values, 0.5)
}

/** `TG_BENCH_PROXY_DEOPTS=1`: the agents run with `--trace-deopt`, and each step counts their deoptimizations. */
const TRACE_DEOPTS = process.env.TG_BENCH_PROXY_DEOPTS === '1'

/** Counts V8's deoptimization lines in a child's stdout (`--trace-deopt`), across chunk boundaries. */
function deoptCounter(child: ChildProcess): () => number {
  let n = 0
  let carry = ''
  child.stdout!.on('data', (d: Buffer) => {
    const text = carry + d.toString('latin1')
    n += text.split('[bailout (kind: deopt').length - 1
    carry = text.slice(-24)
  })
  return () => n
}

/** prom-client's event-loop monitor period (its default `eventLoopMonitoringPrecision`), ms. */
const LOOP_MONITOR_MS = 10

/**
 * The agent's event-loop delay since the last call, from its own /metrics (prom-client's default metrics,
 * sampled every 10 ms and reset by each scrape): p99 and max, ms.
 */
async function loopDelay(metricsPort: number): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const read = (name: string) => {
    const m = new RegExp(`^tailguard_agent_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)
    // Node's histogram records the time between the monitor's timer runs, so its 10 ms period is taken off.
    return m ? Math.max(0, Number(m[1]) * 1000 - LOOP_MONITOR_MS) : NaN
  }
  return { p99: read('p99'), max: read('max') }
}

async function startTailguard(
  upstreamPort: number,
  collectorPort: number,
  nodeOptions = '',
): Promise<{ child: ChildProcess; port: number; metricsPort: number; deopts: () => number }> {
  const otlp = await freePort()
  const child = spawn(
    process.execPath,
    [
      ...(TRACE_DEOPTS ? ['--trace-deopt'] : []),
      CLI,
      ...proxyAgentArgs(`http://127.0.0.1:${upstreamPort}`, `http://127.0.0.1:${collectorPort}`, otlp),
      '--no-otlp-grpc',
    ],
    {
      env: {
        ...process.env,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${nodeOptions}`.trim(),
        TAILGUARD_AGENT_TOKEN: 'bench-agent-token-0123456789',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const deopts = deoptCounter(child)
  return { ...(await waitListening(child, /proxy on http:\/\/[^:]+:(\d+)/)), metricsPort: otlp, deopts }
}

const bench: Bench = {
  name: 'proxy',
  async run(log) {
    const up = await spawnNode(UPSTREAM)
    const targets: Array<{
      name: string
      port: number
      pids: () => number[]
      /** A tailguard agent's /metrics port and deoptimization count. */
      agent?: { metricsPort: number; deopts: () => number }
    }> = [{ name: 'direct', port: up.port, pids: () => [] }]
    const children: ChildProcess[] = [up.child]
    let nginxDir: string | null = null
    try {
      const collector = await spawnNode(STUB_COLLECTOR)
      children.push(collector.child)
      const tg = await startTailguard(up.port, collector.port)
      children.push(tg.child)
      targets.push({ name: 'tailguard', port: tg.port, pids: () => [tg.child.pid!], agent: tg })
      const tgSemi = await startTailguard(up.port, collector.port, `--max-semi-space-size=${SEMI_SPACE_MB}`)
      children.push(tgSemi.child)
      targets.push({
        name: `tailguard ss${SEMI_SPACE_MB}`,
        port: tgSemi.port,
        pids: () => [tgSemi.child.pid!],
        agent: tgSemi,
      })
      const floor = await spawnNode(NODE_FLOOR, [String(up.port)])
      children.push(floor.child)
      targets.push({ name: 'node floor', port: floor.port, pids: () => [floor.child.pid!] })
      const floorHttp = await spawnNode(NODE_FLOOR_HTTP, [String(up.port)])
      children.push(floorHttp.child)
      targets.push({ name: 'node floor http', port: floorHttp.port, pids: () => [floorHttp.child.pid!] })
      const bin = nginxBinary()
      if (bin) {
        const ng = await startNginx(bin, up.port)
        children.push(ng.child)
        nginxDir = ng.dir
        targets.push({
          name: 'nginx',
          port: ng.port,
          pids: () => [ng.child.pid!, ...childPids(ng.child.pid!)],
        })
      } else log('nginx not found: install the Debian package nginx (CI does); the nginx rows are left out')

      for (const t of targets)
        await openLoop({ url: `http://127.0.0.1:${t.port}`, ratePerS: 2000, durationMs: FIRST_WARMUP_MS })
      const rows: Array<Array<string | number>> = []
      /** Median added p99 by path, per rate. */
      const summary: Record<number, Record<string, number>> = {}
      for (const rate of RATES) {
        // Rounds interleave the paths, so a burst of other work on the machine lands on one round of each rather
        // than on one path's whole step; the added latency is the median over rounds of (path − direct) in the
        // same round.
        const steps = new Map<string, PathStep>(targets.map((t) => [t.name, newStep()]))
        for (let round = 0; round < ROUNDS; round++)
          for (const t of targets) {
            const url = `http://127.0.0.1:${t.port}`
            await openLoop({ url, ratePerS: rate, durationMs: WARMUP_MS })
            if (t.agent) await loopDelay(t.agent.metricsPort) // resets the agent's delay histogram
            const deopts0 = t.agent?.deopts() ?? 0
            const cpu0 = cpuSeconds(t.pids())
            const t0 = performance.now()
            const samples = await openLoop({ url, ratePerS: rate, durationMs: DURATION_MS / ROUNDS })
            const step = steps.get(t.name)!
            step.wallS += (performance.now() - t0) / 1000
            step.cpuS += cpuSeconds(t.pids()) - cpu0
            const loop = t.agent ? await loopDelay(t.agent.metricsPort) : null
            if (loop) {
              step.loopP99 = Math.max(step.loopP99, loop.p99)
              step.loopMax = Math.max(step.loopMax, loop.max)
            }
            if (t.agent) step.deopts += t.agent.deopts() - deopts0
            const ok = samples.filter((x) => x.status === 200).map((x) => x.latencyMs)
            step.errors += samples.length - ok.length
            step.all.push(...ok)
            step.rounds.push({ p50: quantile(ok, 0.5), p99: quantile(ok, 0.99) })
          }
        const d = steps.get('direct')!
        const addedAt: Record<string, number> = {}
        for (const t of targets) {
          const step = steps.get(t.name)!
          const p50 = quantile(step.all, 0.5)
          const p99 = quantile(step.all, 0.99)
          const isDirect = t.name === 'direct'
          const added = (q: 'p50' | 'p99') => step.rounds.map((r, i) => r[q] - d.rounds[i]![q])
          const addedP99 = added('p99')
          if (!isDirect) addedAt[t.name] = median(addedP99)
          const cpuPctPer1k = isDirect ? NaN : (step.cpuS / step.wallS / (rate / 1000)) * 100
          log(
            `${rate}/s ${t.name}: p50 ${p50.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms, ${step.errors} errors`,
          )
          rows.push([
            rate,
            t.name,
            p50,
            p99,
            isDirect ? '—' : median(added('p50')),
            isDirect ? '—' : median(addedP99),
            isDirect ? '—' : `${Math.min(...addedP99).toFixed(2)} … ${Math.max(...addedP99).toFixed(2)}`,
            Number.isNaN(cpuPctPer1k) ? '—' : cpuPctPer1k,
            t.agent ? step.loopP99 : '—',
            t.agent ? step.loopMax : '—',
            ...(TRACE_DEOPTS ? [t.agent ? step.deopts : '—'] : []),
            step.errors,
          ])
        }
        summary[rate] = addedAt
      }
      // SSE: how long after the upstream sent the first event the client had it (hrtime is one monotonic
      // clock for every process on the machine), 200 streams per path, 20 at a time.
      const sse: Array<Array<string | number>> = []
      for (const t of targets) {
        const gaps: number[] = []
        for (let round = 0; round < 10; round++)
          await Promise.all(
            Array.from({ length: 20 }, async () => {
              const res = await fetch(`http://127.0.0.1:${t.port}/sse`)
              const reader = res.body!.getReader()
              const { value } = await reader.read()
              const got = process.hrtime.bigint()
              const sent = /data: (\d+)/.exec(Buffer.from(value!).toString())
              if (sent) gaps.push(Number(got - BigInt(sent[1]!)) / 1e6)
              await reader.cancel()
            }),
          )
        log(`SSE ${t.name}: first event p50 ${quantile(gaps, 0.5).toFixed(3)} ms after the upstream sent it`)
        sse.push([t.name, gaps.length, quantile(gaps, 0.5), quantile(gaps, 0.9), quantile(gaps, 0.99)])
      }
      const at2k = summary[2000]!
      const added = (n: string) => at2k[n] ?? NaN
      const ngAdded = added('nginx')
      const verdict = (name: string) => {
        const a = added(name)
        return (
          `${name} adds ${a.toFixed(3)} ms at p99 (target ≤ 1 ms)` +
          (Number.isNaN(ngAdded)
            ? ''
            : ngAdded > 0
              ? `, ${(a / ngAdded).toFixed(2)}× nginx's (target ≤ 1.5×)`
              : ', nginx adding nothing measurable (no ratio)')
        )
      }
      const sseTable = {
        title: 'SSE: first event at the client, ms after the upstream sent it',
        columns: ['path', 'streams', 'p50', 'p90', 'p99'],
        rows: sse,
        notes: ['Target: ≤ 2 ms through tailguard (the test suite checks the median in-process).'],
      }
      return [
        sseTable,
        {
          title:
            'Proxy overhead: open-loop GETs against a tiny upstream (ms; CPU as % of one core per 1k req/s)',
          columns: [
            'req/s',
            'path',
            'p50',
            'p99',
            'added p50',
            'added p99',
            'added p99 by round',
            'CPU %/1k req/s',
            'agent loop delay p99',
            'max',
            ...(TRACE_DEOPTS ? ['deopts'] : []),
            'errors',
          ],
          rows,
          notes: [
            `At 2k req/s ${verdict('tailguard')}; ${verdict(`tailguard ss${SEMI_SPACE_MB}`)}` +
              (Number.isNaN(ngAdded) ? '.' : `; nginx adds ${ngAdded.toFixed(3)} ms.`),
            `node floor: the least a Node proxy does per request (bare net both sides, the head passed on as it came, no measurement, admission, limits or timeouts), what the runtime costs; node floor http: the same behind Node's HTTP server, so the difference is what node:http costs a proxy. At 2k req/s they add ${added('node floor').toFixed(3)} and ${added('node floor http').toFixed(3)} ms at p99` +
              (ngAdded > 0
                ? ` (${(added('node floor') / ngAdded).toFixed(2)}× and ${(added('node floor http') / ngAdded).toFixed(2)}× nginx's).`
                : '.'),
            `tailguard ss${SEMI_SPACE_MB}: the same agent started with NODE_OPTIONS=--max-semi-space-size=${SEMI_SPACE_MB} (docs/proxy.md#overhead).`,
            "Agent loop delay: how late the agent's event loop ran a 10 ms timer during the step, beyond its 10 ms (its own /metrics, tailguard_agent_nodejs_eventloop_lag_*), ms: a request arriving in such a stall waits as long." +
              (TRACE_DEOPTS
                ? ' deopts: V8 deoptimizations in the agent during the step (--trace-deopt).'
                : ' TG_BENCH_PROXY_DEOPTS=1 adds a column of V8 deoptimizations in the agent per step.'),
            `Every path first takes ${FIRST_WARMUP_MS / 1000} s at 2k req/s (the agent compiles its hot path in its first seconds), then ${DURATION_MS / 1000} s per rate in ${ROUNDS} rounds that interleave the paths, each after a ${WARMUP_MS / 1000} s warm-up; latency counts from each request's scheduled send time (no coordinated omission). p50/p99: over all of a path's rounds. Added: the median over rounds of (path − direct in the same round); 'by round' gives the lowest and highest. The load generator, upstream and proxies share this machine's cores with other work, so absolute figures are noisy.`,
          ],
        },
      ]
    } finally {
      for (const c of children.reverse()) await stop(c)
      if (nginxDir) rmSync(nginxDir, { recursive: true, force: true })
    }
  },
}

export default bench
