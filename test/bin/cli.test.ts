import { spawn } from 'node:child_process'
import { existsSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'
import { CLI, assertBuilt, runToEnd } from '../helpers/cli.js'
import { useTempDirs } from '../helpers/temp-dirs.js'
import { packageRoot, packageVersion } from '../../collector/index.js'

// The `tailguard` binary run as a user runs it: through npx, through a symlink (npm link, a global install),
// and with every flag and exit code operators script against.

const ROOT = packageRoot()
const tempDir = useTempDirs('tg-cli-')

const tailguard = (args: readonly string[], env: Record<string, string> = {}) =>
  runToEnd(process.execPath, [CLI, ...args], { env })

/**
 * Every command's flags before the CLI moved out of collector/cli (commit 2fb4517, extracted once from
 * `git show 2fb4517:collector/cli/commands/<command>.ts` and options.ts). A flag may be added, never lost.
 */
const COMMON = ['-c, --config <file>', '--log-level <level>']
const FLAGS_AT_2FB4517: Record<string, readonly string[]> = {
  start: [
    '--data-dir <dir>',
    '--host <host>',
    '--port <n>',
    '--otlp-port <n>',
    '--slos <path>',
    '--no-demo',
    '--demo-speed <x>',
    '--demo-trace <file>',
    ...COMMON,
  ],
  collector: ['--host <host>', '--port <n>', '--db <url>', '--slos <path>', '--metrics-public', ...COMMON],
  agent: [
    '--collector <url>',
    '--otlp-port <n>',
    '--otlp-host <host>',
    '--id <id>',
    '--node <name>',
    '--interval-ms <ms>',
    '--spool-dir <dir>',
    '--no-nvml',
    '--dcgm-url <url>',
    '--gpu-period-ms <ms>',
    ...COMMON,
  ],
  migrate: ['--db <url>', ...COMMON],
  sim: [
    '--trace <path>',
    '--pattern <list>',
    '--time-scale <x>',
    '--rps <n>',
    '--duration <s>',
    '--requests <n>',
    '--model <kind>',
    '--service-ms <ms>',
    '--per-item-ms <ms>',
    '--noise <kind>',
    '--prefill-ms-per-token <ms>',
    '--decode-step-ms <ms>',
    '--decode-ms-per-seq <ms>',
    '--kv-tokens <n>',
    '--window-ms <ms>',
    '--max-batch <n>',
    '--replicas <n>',
    '--min-replicas <n>',
    '--max-replicas <n>',
    '--cold-start-s <s>',
    '--warmup-s <s>',
    '--classes <shares>',
    '--deadline-ms <ms>',
    '--max-queue <n>',
    '--max-concurrency <n>',
    '--slo-p99-ms <ms>',
    '--slo-ttft-ms <ms>',
    '--slo-tpot-ms <ms>',
    '--objective <share>',
    '--policy <list>',
    '--seed <n>',
    '--json',
    '--report <file>',
    '--find-replicas',
    '--target-metric <m>',
    '--hpa-target <share>',
    '--keda-queue-target <n>',
    '--kpa-concurrency <n>',
    '--gpu-hour-usd <usd>',
    '--no-progress',
  ],
}

/** The flags `--help` lists (commander prints each at the start of a line in the Options section). */
function helpFlags(help: string): string[] {
  const options = help.split(/\nOptions:\n/)[1]?.split(/\n\n/)[0] ?? ''
  return [...options.matchAll(/^ {2}(-[^\s,]+(?:, --\S+)?(?: <[^>]+>)?)/gm)].map((m) => m[1]!)
}

describe('the tailguard binary', () => {
  it('runs through npx from the repository and prints the version', async () => {
    assertBuilt()
    // npx installs the repository into its cache as a `file:` package the first time, which runs our lifecycle
    // scripts in the repository itself: `prepare` (the whole build, with vitest's NODE_ENV=test: it rebuilt dist/
    // and the dashboard under the other tests' feet) and node-gyp for the addon. The test is about npx resolving
    // and running the bin, so scripts are off here; the build is `npm test`'s.
    const r = await runToEnd('npx', ['--no-install', 'tailguard', '--version'], {
      env: { npm_config_ignore_scripts: 'true' },
    })
    expect(r.code).toBe(0)
    expect(r.stdout.trim()).toBe(packageVersion())
  }, 180_000) // npx resolves the package first: slow on a loaded machine

  it('runs commands through a symlinked bin, as npm link and global installs set it up', async () => {
    assertBuilt()
    const dir = tempDir()
    const bin = join(dir, 'tailguard')
    symlinkSync(join(ROOT, 'dist', 'bin', 'tailguard.js'), bin)
    const version = await runToEnd(bin, ['--version'], { cwd: dir })
    expect(version.code).toBe(0)
    expect(version.stdout.trim()).toBe(packageVersion())
    const migrate = await runToEnd(bin, ['migrate', '--db', join(dir, 'x.db')], { cwd: dir })
    expect(migrate.stderr).toBe('')
    expect(migrate.code).toBe(0)
    expect(migrate.stdout).toMatch(/^sqlite: applied \d+ migration\(s\)/)
    expect(existsSync(join(dir, 'x.db'))).toBe(true)
  })

  for (const [command, flags] of Object.entries(FLAGS_AT_2FB4517))
    it(`${command} --help keeps every flag it had before the move`, async () => {
      const r = await tailguard([command, '--help'])
      expect(r.code).toBe(0)
      const listed = helpFlags(r.stdout)
      expect(listed.length).toBeGreaterThan(0)
      for (const flag of flags) expect(listed, `${command} ${flag}`).toContain(flag)
    })

  it('keeps its exit codes: 0 help/version, 1 usage errors, 2 bad values and missing settings', async () => {
    expect((await tailguard(['--help'])).code).toBe(0)
    expect((await tailguard(['--version'])).code).toBe(0)
    const unknownCommand = await tailguard(['bogus'])
    expect(unknownCommand.code).toBe(1)
    expect(unknownCommand.stderr).toMatch(/unknown command 'bogus'/)
    const unknownOption = await tailguard(['migrate', '--nope'])
    expect(unknownOption.code).toBe(1)
    expect(unknownOption.stderr).toMatch(/unknown option '--nope'/)
    const badChoice = await tailguard(['collector', '--log-level', 'loud'])
    expect(badChoice.code).toBe(1)
    const badPort = await tailguard(['collector', '--port', '70000'])
    expect(badPort.code).toBe(2)
    expect(badPort.stderr).toMatch(/--port: expected a port number 0-65535, got '70000'/)
    const badWorkers = await tailguard(['collector', '--ingest-workers', 'many'])
    expect(badWorkers.code).toBe(2)
    expect(badWorkers.stderr).toMatch(/--ingest-workers: expected 'auto' or an integer 0-64, got 'many'/)
    const badPolicy = await tailguard(['sim', '--pattern', 'poisson', '--policy', 'nope'])
    expect(badPolicy.code).toBe(2)
    expect(badPolicy.stderr).toMatch(/--policy: unknown policy "nope"/)
  }, 180_000) // nine CLI runs

  it('says which agent token is missing, without naming the collector’s settings', async () => {
    const r = await tailguard(['agent', '--otlp-port', '0', '--no-nvml'], { TAILGUARD_AGENT_TOKEN: '' })
    expect(r.code).toBe(2)
    expect(r.stderr.trim()).toBe(
      'tailguard: agent token missing: set TAILGUARD_AGENT_TOKEN or agent.token in the config file',
    )
    // A token too short for any collector: named by its variable, and never echoed.
    const short = await tailguard(['agent', '--otlp-port', '0', '--no-nvml'], {
      TAILGUARD_AGENT_TOKEN: 'tiny-secret',
    })
    expect(short.code).toBe(2)
    expect(short.stderr).toContain(
      '(environment): TAILGUARD_AGENT_TOKEN: Expected string length greater or equal to 16',
    )
    expect(short.stderr).not.toContain('collector.agentTokens')
    expect(short.stderr).not.toContain('tiny-secret')
  })
})

describe('what the machine refuses, as one line without a stack trace', () => {
  it('a store, a data dir, a host or a URL that cannot be used; an unbounded duration; a bad log level', async () => {
    const dir = tempDir()
    const file = join(dir, 'a-file')
    writeFileSync(file, '')
    const cases: Array<[readonly string[], number, RegExp]> = [
      [
        ['migrate', '--db', join(dir, 'no-dir', 'x.db')],
        2,
        /^tailguard: TG_ERR_STORE_UNAVAILABLE: cannot open store .*directory does not exist$/,
      ],
      [
        ['dead-letter', 'list', '--dir', file],
        1,
        /^tailguard: ENOTDIR: not a directory, scandir .* \(TAILGUARD_DEBUG=1 prints where\)$/,
      ],
      [['decisions', '--collector', 'ftp://x'], 1, /^tailguard: Protocol "ftp:" not supported/],
      [
        ['serve-model', '--host', 'no-such-host.invalid', '--port', '0'],
        1,
        /^tailguard: cannot listen on no-such-host\.invalid:0: the host does not resolve; change the host for --port$/,
      ],
      [
        ['sim', '--pattern', 'poisson', '--rps', '50', '--duration', '1e12', '--no-progress'],
        2,
        /^tailguard: --duration: expected a number > 0 ≤ 7,776,000, got "1e12"$/,
      ],
      [
        ['serve-model', '--log-level', 'verbose'],
        1,
        /option '--log-level <level>' argument 'verbose' is invalid/,
      ],
      [['collector', '--port', ''], 2, /^tailguard: --port: expected a port number 0-65535, got ''$/],
      [
        ['collector', '--port', '0x1F90'],
        2,
        /^tailguard: --port: expected a port number 0-65535, got '0x1F90'$/,
      ],
      [
        ['agent', '--upstream', 'http://127.0.0.1:9', '--otlp-port', '0', '--no-nvml'],
        2,
        /^tailguard: --upstream needs --proxy-port/,
      ],
      [
        ['agent', '--otlp-port', '17190', '--otlp-grpc-port', '17190', '--no-nvml'],
        2,
        /^tailguard: --otlp-grpc-port 17190 is the same port as --otlp-port; give each its own port$/,
      ],
    ]
    const cfg = join(dir, 'demo.yaml')
    writeFileSync(cfg, `version: 1\nstart:\n  demoTrace: ${join(dir, 'gone.csv')}\n`)
    const start = ['start', '--data-dir', join(dir, 'data'), '--port', '0', '--otlp-port', '0', '--no-keda']
    cases.push(
      [
        [...start, '--demo-trace', join(dir, 'gone.csv')],
        2,
        /^tailguard: --demo-trace .*gone\.csv: cannot read \(ENOENT\)$/,
      ],
      [
        [...start, '-c', cfg],
        2,
        /^tailguard: .*demo\.yaml: start\.demoTrace .*gone\.csv: cannot read \(ENOENT\)$/,
      ],
    )
    for (const [args, code, line] of cases) {
      const r = await tailguard(args, { TAILGUARD_AGENT_TOKEN: 'agent-token-0123456789abcdef' })
      expect(r.code, args.join(' ')).toBe(code)
      expect(r.stderr.trim().split('\n')[0], args.join(' ')).toMatch(line)
      expect(r.stderr, args.join(' ')).not.toMatch(/^\s+at /m)
    }
  }, 120_000)
})

describe('a closed stdout pipe (tailguard … | head)', () => {
  it('stops quietly with exit 0, without an EPIPE stack trace', async () => {
    assertBuilt()
    const fixture = join(ROOT, 'test', 'fixtures', 'scrape', 'vllm-0.11-new-names.txt')
    const child = spawn(process.execPath, [CLI, 'scrape', fixture, '--kind', 'vllm'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.stdout.once('data', () => child.stdout.destroy()) // like head after its first lines
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect(stderr).not.toContain('EPIPE')
    expect(code).toBe(0)
  })
})

describe('the import rule (eslint import-x/no-restricted-paths)', () => {
  // Only that rule, without type information: the probes below exist only as text.
  const eslint = new ESLint({
    cwd: ROOT,
    ruleFilter: ({ ruleId }) => ruleId === 'import-x/no-restricted-paths',
    overrideConfig: { files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false } } },
  })
  const lint = async (filePath: string, code: string) =>
    (await eslint.lintText(code, { filePath }))[0]!.messages.map((m) => m.ruleId)

  it('fails a collector file that imports the agent or the controller', async () => {
    expect(
      await lint(
        'collector/probe.ts',
        "import { registerAgent } from '../agent/index.js'\nexport const x = registerAgent\n",
      ),
    ).toEqual(['import-x/no-restricted-paths'])
    expect(
      await lint(
        'collector/routes/probe.ts',
        "import { registerSim } from '../../controller/index.js'\nexport const x = registerSim\n",
      ),
    ).toEqual(['import-x/no-restricted-paths'])
  })

  it('fails an agent or controller file that imports bin/, and allows the collector’s index', async () => {
    expect(
      await lint('agent/probe.ts', "import { run } from '../bin/tailguard.js'\nexport const x = run\n"),
    ).toEqual(['import-x/no-restricted-paths'])
    expect(
      await lint(
        'controller/cli/probe.ts',
        "import { registerStart } from '../../bin/start.js'\nexport const x = registerStart\n",
      ),
    ).toEqual(['import-x/no-restricted-paths'])
    expect(
      await lint(
        'agent/probe.ts',
        "import { packageRoot } from '../collector/index.js'\nexport const x = packageRoot\n",
      ),
    ).toEqual([])
  })
})
