import { build } from 'hdr-histogram-js'
import type { Histogram as HdrHistogram } from 'hdr-histogram-js'

/**
 * hdr-histogram-js in the configuration every agent and stored row used before issue #12 (1 µs to 1 h, 3
 * significant digits): the reference the sparse histogram is tested against, and the benchmark's baseline.
 */
export function hdrReference(): HdrHistogram {
  return build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
    bitBucketSize: 32,
    autoResize: false,
    useWebAssembly: false,
  })
}
