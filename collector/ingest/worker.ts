import { parentPort } from 'node:worker_threads'
import { prepareBody } from './body.js'
import type { IngestJob, IngestAnswer } from './pool.js'

// An ingest worker thread: parses, checks and prepares report bodies ({@link prepareBody}) off the collector's
// thread, one at a time, in the order they come.
parentPort!.on('message', (job: IngestJob) => {
  let answer: IngestAnswer
  try {
    answer = { id: job.id, body: prepareBody(job.body, job.nowMs, job.finestMs) }
  } catch (err) {
    answer = { id: job.id, failed: (err as Error).stack ?? String(err) }
  }
  parentPort!.postMessage(answer)
})
