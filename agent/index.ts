export { createRecorder } from './recorder.js'
export type { Recorder, SeriesHandle, DrainedInterval } from './recorder.js'
export type { RequestSample, SampleSink, Source, SourceStatus, DurationUs, DurationMs } from './types.js'
