import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    exclude: ['test/bench/**', 'node_modules/**', 'dist/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll waits up to 1 s by default: a page or a process on a loaded CI runner can take longer to reach
    // the awaited state (a CI run once saw the signals panel still 'loading' after 1 s). A poll that is met
    // returns at once, so the longer bound only slows a failing test.
    expect: { poll: { timeout: 15_000, interval: 50 } },
    pool: 'forks',
    maxWorkers: 2,
    // Every `tailguard start` a test spawns sizes its serving demo's load to 15% of what two replicas serve flat out by
    // default: a full core each, with a dozen running at once on a small machine. Tests run it light; the
    // test of the demo's load step (test/e2e/start-demo-step.test.ts) asks for the real load with a flag.
    env: { TAILGUARD_DEMO_LOAD: '0.05' },
  },
})
