import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { createGpuCollector } from '../../../agent/gpu/collector.js'
import { createGpuSources } from '../../../agent/gpu/default-sources.js'
import type { SampleSink } from '../../../agent/types.js'

describe('GPU collector on a machine without NVML', () => {
  it('reports the NVML source unavailable with the dlopen reason, an empty interval, and source_up 0', async () => {
    const drops: string[] = []
    const sink: SampleSink = {
      recordRequest: () => {},
      recordLatency: () => {},
      drop: (r) => void drops.push(r),
    }
    const lines: string[] = []
    const gpu = createGpuCollector({
      sources: createGpuSources({
        periodMs: 1000,
        nvmlLibrary: '/nonexistent/libnvidia-ml.so.1',
        log: (l) => lines.push(l),
      }),
      hostname: 'h',
    })
    const registry = new Registry()
    gpu.registerMetrics(registry)
    await gpu.start(sink)
    const [nvml] = gpu.statuses()
    expect(nvml!.name).toBe('nvml')
    expect(nvml!.status).toEqual({
      state: 'unavailable',
      reason: expect.stringMatching(
        /^dlopen \/nonexistent\/libnvidia-ml\.so\.1: .*No such file or directory/,
      ),
    })
    expect(lines).toEqual([expect.stringMatching(/^nvml: unavailable: dlopen /)])
    expect(gpu.drainInterval()).toEqual([])
    const text = await registry.metrics()
    expect(text).toContain('tailguard_gpu_source_up{source="nvml"} 0')
    expect(text).not.toMatch(/^DCGM_FI_DEV_GPU_UTIL\{/m)
    expect(drops).toEqual([])
    await gpu.stop()
  })

  it('adds a DCGM source only when given a URL', () => {
    expect(createGpuSources({ nvml: false }).map((s) => s.name)).toEqual([])
    expect(createGpuSources({ dcgmUrl: 'http://127.0.0.1:9400/metrics' }).map((s) => s.name)).toEqual([
      'nvml',
      'dcgm',
    ])
  })
})
