import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { BadRequest, packageRoot, WhatifBusy, WhatifTimeout } from '../../collector/index.js'
import {
  planWhatif,
  runWhatif,
  WHATIF_MAX_TRACE_BYTES,
  WHATIF_TIMEOUT_MS,
  WhatifAnswerSchema,
  WhatifInputError,
  WhatifRequestSchema,
} from './whatif.js'
import type { WhatifAnswer } from './whatif.js'
import type { PolicyName } from './scenario.js'
import type { SimFlags, Workload } from './workload.js'

/** Where the compiled worker is: next to this module when it runs from dist/, else dist/ from the sources. */
function workerPath(): string | null {
  const here = fileURLToPath(new URL('./whatif-worker.js', import.meta.url))
  if (existsSync(here)) return here
  const built = join(packageRoot(), 'dist', 'controller', 'sim', 'whatif-worker.js')
  return existsSync(built) ? built : null
}

type Plan = { workload: Workload; flags: SimFlags }

/** Runs a what-if in a worker thread, stopped after `timeoutMs`; inline only when no compiled worker exists. */
function runInWorker(plan: Plan, policies: PolicyName[], timeoutMs: number): Promise<WhatifAnswer> {
  const path = workerPath()
  if (path === null) return Promise.resolve(runWhatif(plan, policies))
  return new Promise((resolve, reject) => {
    const worker = new Worker(path, { workerData: { plan, policies } })
    let answered = false
    const timer = setTimeout(() => {
      answered = true
      void worker.terminate()
      reject(
        new WhatifTimeout(`the what-if ran past ${timeoutMs / 1000} s and was stopped; ask for less work`),
      )
    }, timeoutMs)
    worker.once('message', (answer: WhatifAnswer) => {
      answered = true
      clearTimeout(timer)
      resolve(answer)
    })
    worker.once('error', (err) => {
      clearTimeout(timer)
      if (!answered) reject(err)
      answered = true
    })
    worker.once('exit', (code) => {
      clearTimeout(timer)
      if (!answered) reject(new Error(`what-if worker exited with code ${code} before answering`))
      answered = true
    })
  })
}

/**
 * `POST /api/v1/whatif` (admin scope): runs the simulator of `tailguard sim` on a synthetic pattern or an uploaded
 * trace under the policies asked for, and answers the comparison table and per-minute replica and p99 series.
 * Work is bounded (requests per policy, trace size, a time limit, one run at a time) and runs in a worker thread,
 * off the event loop. A plugin for the collector app, registered by the composition root (bin/).
 *
 * @example
 * ```ts
 * await runCollector(config, logger, { plugins: [createWhatifRoutes()] })
 * ```
 */
export function createWhatifRoutes(
  opts: { timeoutMs?: number } = {},
): (app: FastifyInstance) => Promise<void> {
  const timeoutMs = opts.timeoutMs ?? WHATIF_TIMEOUT_MS
  let running = false
  return async (fastify) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
    app.post(
      '/whatif',
      {
        config: { scope: 'admin' },
        // JSON escaping can double a CSV's size; the schema holds the CSV itself to WHATIF_MAX_TRACE_BYTES.
        bodyLimit: 2 * WHATIF_MAX_TRACE_BYTES + 64 * 1024,
        schema: {
          summary: 'What-if: simulate a pattern or an uploaded trace under several policies and compare them',
          body: WhatifRequestSchema,
          response: { 200: WhatifAnswerSchema },
        },
      },
      async (req) => {
        if (running)
          throw new WhatifBusy('another what-if is running on this collector; try again when it ends')
        running = true
        let plan: ReturnType<typeof planWhatif> | null = null
        try {
          plan = planWhatif(req.body)
          return await runInWorker(
            { workload: plan.workload, flags: plan.flags },
            req.body.policies as PolicyName[],
            timeoutMs,
          )
        } catch (err) {
          if (err instanceof WhatifInputError) throw new BadRequest(err.message)
          throw err
        } finally {
          plan?.cleanup()
          running = false
        }
      },
    )
  }
}
