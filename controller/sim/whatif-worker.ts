import { parentPort, workerData } from 'node:worker_threads'
import { runWhatif } from './whatif.js'
import type { PolicyName } from './scenario.js'
import type { SimFlags, Workload } from './workload.js'

/** The worker thread of `POST /api/v1/whatif` (routes.ts): one run per worker, answered as one message. */
const data = workerData as { plan: { workload: Workload; flags: SimFlags }; policies: PolicyName[] }
parentPort!.postMessage(runWhatif(data.plan, data.policies))
