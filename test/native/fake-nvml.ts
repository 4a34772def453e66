// Test helpers: compile the fake libnvidia-ml, turn a JSON scenario into its line format, make sure the addon
// is built, and run a scenario in a child process (the addon opens NVML once per process).
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository root: the first folder above this file that holds binding.gyp (works from dist/ too). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'binding.gyp')) && dirname(dir) !== dir) dir = dirname(dir)
  return dir
}
export const REPO_ROOT = repoRoot()
/** test/native in the sources (not in dist/): the C file, scenarios and child script live there. */
export const HERE = join(REPO_ROOT, 'test', 'native')
export const ADDON_PATH = join(REPO_ROOT, 'build', 'Release', 'tailguard_nvml.node')

export interface FakeMigDevice {
  slot: number
  gpuInstanceId: number
  computeInstanceId: number
  uuid: string
  memTotalBytes: number
  memUsedBytes: number
}
export interface FakeDevice {
  uuid: string
  name: string
  pciBusId: string
  utilGpu?: number[]
  utilMem?: number[]
  memTotalBytes?: number
  memReservedBytes?: number
  memUsedBytes?: number[]
  powerMw?: number[]
  energyMj?: number[]
  temperatureC?: number[]
  smClockMhz?: number[]
  memClockMhz?: number[]
  clockEventReasons?: number[]
  eccCorrected?: number[]
  eccUncorrected?: number[]
  pcieTxKBps?: number[]
  pcieRxKBps?: number[]
  /** The driver has the PCIe byte counters (NVML_FI_DEV_PCIE_COUNT_*), as drivers from R535 on do. */
  pcieCounters?: boolean
  /** The driver answers NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION through nvmlDeviceGetFieldValues. */
  energyField?: boolean
  notSupported?: string[]
  mig?: { current: number; pending: number }
  migDevices?: FakeMigDevice[]
  processes?: Array<{
    pid: number
    usedMemoryBytes: number
    gpuInstanceId?: number
    computeInstanceId?: number
  }>
  processUtilization?: Array<{ pid: number; sm: number; mem: number; enc: number; dec: number }>
  lostAfter?: number
  events?: Array<{
    type: number
    data: number
    delayMs: number
    gpuInstanceId?: number
    computeInstanceId?: number
  }>
}
export interface FakeScenario {
  driverVersion: string
  nvmlVersion: string
  initError?: number
  devices: FakeDevice[]
}

const NONE = 0xffffffff

/** The fake's line format for a JSON scenario (see the comment at the top of fake-nvml.c). */
export function scenarioText(s: FakeScenario): string {
  const lines = [`driver ${s.driverVersion}`, `nvml ${s.nvmlVersion}`]
  if (s.initError !== undefined) lines.push(`init_error ${s.initError}`)
  const curve = (key: string, v: number[] | undefined) => {
    if (v !== undefined) lines.push(`${key} ${v.join(' ')}`)
  }
  s.devices.forEach((d, i) => {
    lines.push(`device ${i}`, `uuid ${d.uuid}`, `name ${d.name}`, `pci ${d.pciBusId}`)
    curve('util_gpu', d.utilGpu)
    curve('util_mem', d.utilMem)
    if (d.memTotalBytes !== undefined) lines.push(`mem_total ${d.memTotalBytes}`)
    if (d.memReservedBytes !== undefined) lines.push(`mem_reserved ${d.memReservedBytes}`)
    curve('mem_used', d.memUsedBytes)
    curve('power_mw', d.powerMw)
    curve('energy_mj', d.energyMj)
    curve('temp_c', d.temperatureC)
    curve('sm_clock', d.smClockMhz)
    curve('mem_clock', d.memClockMhz)
    curve('reasons', d.clockEventReasons)
    curve('ecc_corrected', d.eccCorrected)
    curve('ecc_uncorrected', d.eccUncorrected)
    curve('pcie_tx', d.pcieTxKBps)
    curve('pcie_rx', d.pcieRxKBps)
    if (d.pcieCounters) lines.push('pcie_counters 1')
    if (d.energyField) lines.push('energy_field 1')
    if (d.notSupported?.length) lines.push(`not_supported ${d.notSupported.join(' ')}`)
    if (d.mig !== undefined) lines.push(`mig ${d.mig.current} ${d.mig.pending}`)
    for (const m of d.migDevices ?? [])
      lines.push(
        `mig_device ${m.slot} ${m.gpuInstanceId} ${m.computeInstanceId} ${m.uuid} ${m.memTotalBytes} ${m.memUsedBytes}`,
      )
    for (const p of d.processes ?? [])
      lines.push(
        `proc ${p.pid} ${p.usedMemoryBytes} ${p.gpuInstanceId ?? NONE} ${p.computeInstanceId ?? NONE}`,
      )
    for (const u of d.processUtilization ?? [])
      lines.push(`proc_util ${u.pid} ${u.sm} ${u.mem} ${u.enc} ${u.dec}`)
    if (d.lostAfter !== undefined) lines.push(`lost_after ${d.lostAfter}`)
    for (const e of d.events ?? [])
      lines.push(
        `event ${e.type} ${e.data} ${e.delayMs}` +
          (e.gpuInstanceId !== undefined ? ` ${e.gpuInstanceId} ${e.computeInstanceId ?? NONE}` : ''),
      )
  })
  return lines.join('\n') + '\n'
}

export function loadScenario(name: string): FakeScenario {
  return JSON.parse(readFileSync(join(HERE, 'scenarios', `${name}.json`), 'utf8')) as FakeScenario
}

/** A fresh temp dir for one test's files. */
export const tempDir = (): string => mkdtempSync(join(tmpdir(), 'tg-fake-nvml-'))

/** Compiles test/native/fake-nvml.c into `dir`; `omit` names NVML functions the library will lack. */
export function compileFakeNvml(dir: string, omit: readonly string[] = []): string {
  const out = join(dir, `libfake-nvml${omit.length ? '-' + omit.join('-') : ''}.so`)
  execFileSync('cc', [
    '-shared',
    '-fPIC',
    '-O1',
    '-o',
    out,
    join(HERE, 'fake-nvml.c'),
    ...omit.map((f) => `-DFAKE_OMIT_${f}`),
    '-lpthread',
  ])
  return out
}

/** Builds the addon with node-gyp when `npm ci` has not (offline: headers from nodedir). */
export function ensureAddon(): string {
  if (!existsSync(ADDON_PATH)) {
    const gyp = join(
      dirname(process.execPath),
      '..',
      'lib',
      'node_modules',
      'npm',
      'node_modules',
      'node-gyp',
      'bin',
      'node-gyp.js',
    )
    const nodedir = process.env['npm_config_nodedir'] ?? dirname(dirname(process.execPath))
    execFileSync(process.execPath, [gyp, 'rebuild', `--nodedir=${nodedir}`], {
      cwd: REPO_ROOT,
      stdio: 'ignore',
    })
  }
  return ADDON_PATH
}

let bundled: string | undefined
/** Bundles test/native/child.ts (and the agent code it imports) into one ESM file a plain `node` can run. */
export async function childScript(): Promise<string> {
  if (bundled !== undefined) return bundled
  const esbuild = await import('esbuild')
  const out = join(tempDir(), 'child.mjs')
  await esbuild.build({
    entryPoints: [join(HERE, 'child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: out,
    logLevel: 'silent',
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  })
  bundled = out
  return out
}

export interface ChildResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly json: unknown
}

/** Runs one scenario in a child process; the child prints one JSON line. */
export async function runScenario(
  mode: string,
  scenario: FakeScenario | undefined,
  library: string,
  extraEnv: Record<string, string> = {},
): Promise<ChildResult> {
  const script = await childScript()
  const dir = tempDir()
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    TAILGUARD_NVML_LIBRARY: library,
    TG_TEST_ADDON: ensureAddon(),
    TG_TEST_MODE: mode,
    ...extraEnv,
  }
  if (scenario !== undefined) {
    const file = join(dir, 'scenario.txt')
    writeFileSync(file, scenarioText(scenario))
    env['FAKE_NVML_SCENARIO'] = file
  }
  return await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()))
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()))
    child.on('error', reject)
    child.on('close', (code) => {
      const last = stdout.trim().split('\n').pop() ?? ''
      let json: unknown
      try {
        json = JSON.parse(last)
      } catch {
        json = undefined
      }
      resolve({ code, stdout, stderr, json })
    })
  })
}
