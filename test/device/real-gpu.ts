// The GPU path on a machine with a real NVIDIA GPU and driver, checked from outside: the NVML addon against
// nvidia-smi, then `tailguard collector` and `tailguard agent` as processes while a PyTorch job loads the GPU, the
// job's process attributed to its replica through its parent's PID, and the agent's DCGM-named metrics.
// Not part of `npm test` (CI has no GPU). On a GPU node, after `npm ci`:
//   npx tsc -p tsconfig.json && node dist/test/device/real-gpu.js [--out DIR] [--load-s 40]
// It prints one line per check and exits 1 if any failed; --out DIR also gets report.json with every reading.
import { execFileSync, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadNativeNvml } from '../../agent/sources/nvml-native.js'
import { packageRoot } from '../../collector/paths.js'
import { freePort } from '../helpers/ports.js'

const { values: args } = parseArgs({
  options: { out: { type: 'string' }, 'load-s': { type: 'string', default: '40' } },
})
const cli = join(packageRoot(), 'dist', 'bin', 'tailguard.js')
const loadS = Number(args['load-s'])
const report: Record<string, unknown> = {}
const results: Array<{ check: string; ok: boolean; detail: string }> = []
const check = (name: string, ok: boolean, detail: string) => {
  results.push({ check: name, ok, detail })
  console.log(`${ok ? 'PASS' : 'FAIL'}  ${name}: ${detail}`)
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const smi = (query: string, kind = '--query-gpu') =>
  execFileSync('nvidia-smi', [`${kind}=${query}`, '--format=csv,noheader,nounits'], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split(',').map((c) => c.trim()))

// 1. The addon against nvidia-smi, in this process.
const smiGpus = smi('index,uuid,name,pci.bus_id,memory.total,driver_version')
report['nvidiaSmi'] = smiGpus
const nvml = loadNativeNvml()
const system = nvml.initAsync ? await nvml.initAsync() : nvml.init()
report['system'] = system
check(
  'device count',
  system.deviceCount === smiGpus.length,
  `NVML ${system.deviceCount}, nvidia-smi ${smiGpus.length}; driver ${system.driverVersion}, NVML ${system.nvmlVersion}`,
)
check(
  'driver version',
  system.driverVersion === smiGpus[0]?.[5],
  `${system.driverVersion} vs nvidia-smi ${smiGpus[0]?.[5]}`,
)
const devices = []
for (let i = 0; i < system.deviceCount; i++) {
  const info = nvml.deviceInfo(i)
  const sample = nvml.sample(i)
  devices.push({ info, sample })
  const ref = smiGpus[i]!
  check(
    `GPU ${i} identity`,
    info.uuid === ref[1] &&
      info.name === ref[2] &&
      (info.pciBusId ?? '').toLowerCase() === ref[3]!.toLowerCase(),
    `${info.uuid} ${info.name} ${info.pciBusId} (nvidia-smi: ${ref.slice(1, 4).join(' ')})`,
  )
  const totalMiB = (sample.memTotalBytes ?? 0) / 2 ** 20
  check(
    `GPU ${i} memory total`,
    Math.abs(totalMiB - Number(ref[4])) <= 1,
    `${totalMiB.toFixed(0)} MiB (nvidia-smi ${ref[4]} MiB)`,
  )
  check(
    `GPU ${i} fields`,
    ['gpuUtilPct', 'memUsedBytes', 'powerMw', 'temperatureC', 'smClockMhz'].every(
      (f) => typeof (sample as unknown as Record<string, unknown>)[f] === 'number',
    ),
    `unsupported: ${JSON.stringify([...info.unsupported, ...sample.unsupported])}; sample ${JSON.stringify(sample)}`,
  )
}
report['devices'] = devices
if (nvml.samplePass) {
  const indices = devices.map((_, i) => i)
  const times: number[] = []
  for (let k = 0; k < 20; k++) {
    const t0 = performance.now()
    await nvml.samplePass(indices, {
      processes: true,
      processUtilization: true,
      sinceUs: indices.map(() => 0),
    })
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  report['samplePassMs'] = times
  check(
    'sampling pass',
    true,
    `${indices.length} GPU(s), processes and utilization included: median ${times[10]!.toFixed(2)} ms, max ${times[19]!.toFixed(2)} ms (20 passes, on the thread pool)`,
  )
}
const events: unknown[] = []
const registered = nvml.startEvents(0xffff_ffff, (e) => events.push(e), 250)
await sleep(1000)
await nvml.stopEvents()
check(
  'event thread',
  true,
  `registered ${JSON.stringify(registered)}, stopped cleanly; events ${JSON.stringify(events)}`,
)
nvml.shutdown()

// 2. The CLI's collector and agent, with a PyTorch job that is the child of the replica's process.
const dir = mkdtempSync(join(tmpdir(), 'tg-real-gpu-'))
const burn = join(dir, 'burn.py')
writeFileSync(
  burn,
  [
    'import os, sys, time, torch',
    "x = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)",
    'y = torch.randn_like(x)',
    "hold = torch.empty(4 << 30, dtype=torch.uint8, device='cuda')",
    'torch.cuda.synchronize()',
    "print('ready', os.getpid(), flush=True)",
    'end = time.time() + float(sys.argv[1])',
    'while time.time() < end:',
    '    for _ in range(20):',
    '        z = x @ y',
    '    torch.cuda.synchronize()',
    "print('done', flush=True)",
  ].join('\n'),
)
// `; echo` keeps bash from exec'ing python, so python is bash's child and only bash's PID is configured.
const wrapper = spawn('bash', ['-c', `python3 ${burn} ${loadS}; echo wrapper-exit`], {
  stdio: ['ignore', 'pipe', 'inherit'],
})
const children: ChildProcess[] = [wrapper]
const burnPid = await new Promise<number>((res, rej) => {
  let buf = ''
  wrapper.stdout!.on('data', (d: Buffer) => {
    buf += d.toString()
    const m = /ready (\d+)/.exec(buf)
    if (m) res(Number(m[1]))
  })
  wrapper.once('exit', (code) => rej(new Error(`the PyTorch job exited (${code}) before it was ready`)))
})
console.log(`load: python ${burnPid} under bash ${wrapper.pid}`)

const collectorPort = await freePort()
const agentPort = await freePort()
const READ = 'read-token-real-gpu-0123456789'
const ADMIN = 'admin-token-real-gpu-0123456789'
const AGENT = 'agent-token-real-gpu-0123456789'
const config = join(dir, 'tailguard.yaml')
writeFileSync(
  config,
  `version: 1
collector:
  port: ${collectorPort}
  db: ${join(dir, 'tailguard.db')}
  apiTokens: [{ token: ${ADMIN}, scope: admin }, { token: ${READ}, scope: read }]
  agentTokens: [{ token: ${AGENT} }]
agent:
  id: gpu-check
  node: gpu-node
  collector: http://127.0.0.1:${collectorPort}
  token: ${AGENT}
  intervalMs: 1000
  gpu: { nvml: true, periodMs: 500 }
  replicas:
    - { service: burn, model: matmul, version: "1", replica: burn-0, pids: [${wrapper.pid}] }
`,
)
const start = (name: string, argv: string[]) => {
  const child = spawn(process.execPath, [cli, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  children.push(child)
  return { child, output: () => out, name }
}
const collector = start('collector', ['collector', '--config', config])
const agent = start('agent', [
  'agent',
  '--config',
  config,
  '--otlp-port',
  String(agentPort),
  '--no-otlp-grpc',
  '--gpu-period-ms',
  '500',
])
const get = async (url: string, token?: string) => {
  const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {})
  return { status: res.status, text: await res.text() }
}

interface GpuBody {
  gpus: Array<{
    uuid: string
    name: string
    fields: Record<string, { min: number; mean: number; max: number; last: number }>
    unsupported: string[]
    processes: Array<{
      pid: number
      usedMemoryBytes: { last: number } | null
      smUtilPct: { last: number; max: number } | null
      replica: { replica: string } | null
    }>
  }>
  replicas: Array<{ replica: string; pids: number[]; usedMemoryBytes: number; smUtilPct: number | null }>
}
let body: GpuBody | undefined
const deadline = Date.now() + Math.min(60_000, (loadS - 5) * 1000)
let smiDuring: string[][] = []
let smiApps: string[][] = []
while (Date.now() < deadline) {
  await sleep(1000)
  try {
    const r = await get(`http://127.0.0.1:${collectorPort}/api/v1/gpus`, READ)
    if (r.status !== 200) continue
    body = JSON.parse(r.text) as GpuBody
    smiDuring = smi('utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm')
    smiApps = smi('pid,used_memory', '--query-compute-apps')
    const g = body.gpus[0]
    const p = g?.processes.find((x) => x.pid === burnPid)
    if (g && p?.replica && (g.fields['gpuUtilPct']?.max ?? 0) >= 50 && p.smUtilPct) break
  } catch {
    // the collector is still starting
  }
}
report['gpusDuringLoad'] = body
report['nvidiaSmiDuringLoad'] = { gpus: smiDuring, computeApps: smiApps }
const g0 = body?.gpus[0]
check(
  'collector inventory',
  g0 !== undefined && g0.uuid === smiGpus[0]![1],
  g0 ? `${g0.uuid} ${g0.name}, unsupported ${JSON.stringify(g0.unsupported)}` : 'no GPU in GET /api/v1/gpus',
)
const util = g0?.fields['gpuUtilPct']
check(
  'utilization under load',
  (util?.max ?? 0) >= 50,
  `gpuUtilPct ${JSON.stringify(util)}; nvidia-smi utilization.gpu ${smiDuring[0]?.[0]}%`,
)
const power = g0?.fields['powerW']
check(
  'power under load',
  power !== undefined && Math.abs(power.last - Number(smiDuring[0]?.[2])) / Number(smiDuring[0]?.[2]) < 0.5,
  `powerW ${JSON.stringify(power)}; nvidia-smi power.draw ${smiDuring[0]?.[2]} W (read at another instant)`,
)
const pcie = g0?.fields['pcieTxKBps']
const energy = g0?.fields['energyMj']
check(
  'PCIe throughput and energy',
  pcie !== undefined && energy !== undefined && energy.max > energy.min,
  `pcieTxKBps ${JSON.stringify(pcie)}, pcieRxKBps ${JSON.stringify(g0?.fields['pcieRxKBps'])}, energyMj ${JSON.stringify(energy)}`,
)
const proc = g0?.processes.find((x) => x.pid === burnPid)
const smiMiB = Number(smiApps.find((a) => Number(a[0]) === burnPid)?.[1] ?? NaN)
check(
  'process attributed through its parent',
  proc?.replica?.replica === 'burn-0',
  proc
    ? `pid ${proc.pid} → ${JSON.stringify(proc.replica)}`
    : `pid ${burnPid} not among ${JSON.stringify(g0?.processes)}`,
)
check(
  'process memory',
  proc?.usedMemoryBytes != null && Math.abs(proc.usedMemoryBytes.last / 2 ** 20 - smiMiB) <= 2,
  `${((proc?.usedMemoryBytes?.last ?? 0) / 2 ** 20).toFixed(0)} MiB; nvidia-smi --query-compute-apps ${smiMiB} MiB`,
)
check(
  'process SM utilization',
  (proc?.smUtilPct?.max ?? 0) > 0,
  `smUtilPct ${JSON.stringify(proc?.smUtilPct)}`,
)
const metrics = await get(`http://127.0.0.1:${agentPort}/metrics`).catch((e: Error) => ({
  status: 0,
  text: e.message,
}))
const metricLines = metrics.text
  .split('\n')
  .filter((l) =>
    /^(DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_POWER_USAGE|tailguard_gpu_process_memory_bytes|tailguard_gpu_source_up)/.test(
      l,
    ),
  )
report['agentMetrics'] = metricLines
check(
  "agent's /metrics",
  metricLines.some((l) => l.startsWith('DCGM_FI_DEV_GPU_UTIL{')) &&
    metricLines.some(
      (l) => l.startsWith('tailguard_gpu_process_memory_bytes{') && l.includes('replica="burn-0"'),
    ),
  metricLines.join(' | ').slice(0, 600),
)
const ts = await get(
  `http://127.0.0.1:${collectorPort}/api/v1/gpus/timeseries?field=gpuUtilPct&from=-5m&step=10s`,
  READ,
)
report['timeseries'] = ts.text
check('GPU time series', ts.status === 200 && ts.text.includes('"points":[{'), ts.text.slice(0, 300))

// 3. Clean stops: the agent's event thread and sampling end with SIGTERM.
const exitCode = (c: ChildProcess) =>
  new Promise<number | null>((res) =>
    c.exitCode !== null ? res(c.exitCode) : c.once('exit', (code) => res(code)),
  )
agent.child.kill('SIGTERM')
const agentExit = await Promise.race([exitCode(agent.child), sleep(15_000).then(() => 'timeout' as const)])
collector.child.kill('SIGTERM')
const collectorExit = await Promise.race([
  exitCode(collector.child),
  sleep(15_000).then(() => 'timeout' as const),
])
check('agent stops on SIGTERM', agentExit === 0, `exit ${agentExit}`)
check('collector stops on SIGTERM', collectorExit === 0, `exit ${collectorExit}`)
for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
report['agentOutput'] = agent.output()
report['collectorOutput'] = collector.output()
report['results'] = results

if (args.out) {
  mkdirSync(args.out, { recursive: true })
  writeFileSync(join(args.out, 'report.json'), JSON.stringify(report, null, 2))
}
const failed = results.filter((r) => !r.ok).length
console.log(`${results.length - failed}/${results.length} checks passed`)
if (failed > 0) {
  console.log(`agent output:\n${agent.output()}`)
  process.exitCode = 1
}
