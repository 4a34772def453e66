import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import Fastify, { LogController } from 'fastify'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { createBatcher } from './batcher.js'
import type { Batcher, BatchingSettings } from './batcher.js'
import { createEngine } from './engine.js'
import type { Engine, FinishReason } from './engine.js'
import { createMlp } from './mlp.js'
import type { Mlp } from './mlp.js'

/**
 * Options of {@link buildModelServer}.
 *
 * @example
 * ```ts
 * const opts: ModelServerOptions = { ...MODEL_SERVER_DEFAULTS, modelName: 'mlp' }
 * ```
 */
export interface ModelServerOptions {
  /** The model's name in KServe paths, the OpenAI `model` field and the `model_name` metric label. */
  readonly modelName: string
  readonly hidden: number
  readonly layers: number
  readonly seed: number
  readonly batching: BatchingSettings
  /** Sequences generating at once; more wait (`vllm:num_requests_waiting`). */
  readonly maxRunning: number
  /** The modelled KV cache, in tokens (`vllm:kv_cache_usage_perc` is the used fraction). */
  readonly kvCapacityTokens: number
  /** Largest `max_tokens` a completion may ask for. */
  readonly maxTokensLimit: number
  readonly bodyLimitBytes: number
  /** Bearer token for `/v1/batching`; null leaves it open (bind to loopback then). */
  readonly adminToken: string | null
}

/**
 * Defaults of the reference model server: a 2-layer MLP 1024 wide, batches of up to 16 within 5 ms.
 *
 * @example buildModelServer({ ...MODEL_SERVER_DEFAULTS, hidden: 256 })
 */
export const MODEL_SERVER_DEFAULTS: ModelServerOptions = {
  modelName: 'tailguard-mlp',
  hidden: 1024,
  layers: 2,
  seed: 1,
  batching: { windowMs: 5, maxBatch: 16 },
  maxRunning: 64,
  kvCapacityTokens: 16_384,
  maxTokensLimit: 4096,
  bodyLimitBytes: 8 * 1024 * 1024,
  adminToken: null,
}

/** A built (not listening) reference model server. */
export interface ModelServer {
  readonly app: FastifyInstance
  readonly model: Mlp
  readonly batcher: Batcher
  readonly engine: Engine
  readonly registry: Registry
  close(): Promise<void>
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest()

function fail(reply: FastifyReply, statusCode: number, message: string, code = 'TG_ERR_BAD_REQUEST') {
  // `error` is what KServe and OpenAI clients read; `code`/`message`/`statusCode` are tailguard's shape.
  return reply.code(statusCode).send({ error: message, code, message, statusCode })
}

const TOKEN_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]
const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80]

/** Flattens a KServe `data` field (flat or nested rows) into numbers; null when it is not one. */
function flatten(data: unknown, into: number[]): boolean {
  if (!Array.isArray(data)) return false
  for (const x of data) {
    if (typeof x === 'number') into.push(x)
    else if (Array.isArray(x)) {
      for (const y of x) {
        if (typeof y !== 'number') return false
        into.push(y)
      }
    } else return false
  }
  return true
}

interface InferInput {
  name?: unknown
  shape?: unknown
  datatype?: unknown
  data?: unknown
}

/**
 * Builds the reference model server (`tailguard serve-model`): a real CPU model behind a dynamic batcher,
 * speaking a subset of the KServe v2 inference protocol (`/v2/health/ready`, `/v2/models/{m}`,
 * `/v2/models/{m}/infer`, `/v2/models/{m}/stats` in Triton's statistics format), an OpenAI-style
 * `/v1/completions` that streams tokens as SSE, `/metrics` in vLLM's names, and `GET|PUT /v1/batching`
 * to change the batching window and max batch at runtime (contract 3).
 *
 * @example
 * ```ts
 * const server = buildModelServer({ ...MODEL_SERVER_DEFAULTS, hidden: 256 })
 * await server.app.listen({ host: '127.0.0.1', port: 8000 })
 * ```
 */
export function buildModelServer(
  opts: ModelServerOptions,
  deps: { readonly logger?: FastifyBaseLogger } = {},
): ModelServer {
  const model = createMlp({ hidden: opts.hidden, layers: opts.layers, seed: opts.seed })
  const batcher = createBatcher(model, opts.batching)
  const engine = createEngine(model, batcher, {
    maxRunning: opts.maxRunning,
    kvCapacityTokens: opts.kvCapacityTokens,
  })
  const name = opts.modelName
  const registry = new Registry()
  const labels = { model_name: name }
  new Gauge({
    name: 'vllm:num_requests_running',
    help: 'Number of requests in model execution batches.',
    labelNames: ['model_name'],
    registers: [registry],
    collect() {
      this.set(labels, engine.running)
    },
  })
  new Gauge({
    name: 'vllm:num_requests_waiting',
    help: 'Number of requests waiting to be processed.',
    labelNames: ['model_name'],
    registers: [registry],
    collect() {
      this.set(labels, engine.waiting)
    },
  })
  new Gauge({
    name: 'vllm:kv_cache_usage_perc',
    help: 'KV-cache usage. 1 means 100 percent usage.',
    labelNames: ['model_name'],
    registers: [registry],
    collect() {
      this.set(labels, engine.kvCacheUsage)
    },
  })
  const ttft = new Histogram({
    name: 'vllm:time_to_first_token_seconds',
    help: 'Histogram of time to first token in seconds.',
    labelNames: ['model_name'],
    buckets: TOKEN_BUCKETS,
    registers: [registry],
  })
  const itl = new Histogram({
    name: 'vllm:inter_token_latency_seconds',
    help: 'Histogram of inter-token latency in seconds.',
    labelNames: ['model_name'],
    buckets: TOKEN_BUCKETS,
    registers: [registry],
  })
  const tpot = new Histogram({
    name: 'vllm:time_per_output_token_seconds',
    help: 'Histogram of time per output token in seconds (mean per request).',
    labelNames: ['model_name'],
    buckets: TOKEN_BUCKETS,
    registers: [registry],
  })
  const e2e = new Histogram({
    name: 'vllm:e2e_request_latency_seconds',
    help: 'Histogram of end to end request latency in seconds.',
    labelNames: ['model_name'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  })
  const queueTime = new Histogram({
    name: 'vllm:request_queue_time_seconds',
    help: 'Histogram of time spent in WAITING phase for request.',
    labelNames: ['model_name'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  })
  const promptTokens = new Counter({
    name: 'vllm:prompt_tokens_total',
    help: 'Number of prefill tokens processed.',
    labelNames: ['model_name'],
    registers: [registry],
  })
  const generationTokens = new Counter({
    name: 'vllm:generation_tokens_total',
    help: 'Number of generation tokens processed.',
    labelNames: ['model_name'],
    registers: [registry],
  })
  const success = new Counter({
    name: 'vllm:request_success_total',
    help: 'Count of successfully processed requests.',
    labelNames: ['model_name', 'finished_reason'],
    registers: [registry],
  })
  new Gauge({
    name: 'tailguard_model_batch_size',
    help: 'Size of the last batch the model ran',
    labelNames: ['model_name'],
    registers: [registry],
    collect() {
      this.set(labels, batcher.stats.lastBatchSize)
    },
  })
  new Gauge({
    name: 'tailguard_model_batches_total',
    help: 'Forward passes run',
    labelNames: ['model_name'],
    registers: [registry],
    collect() {
      this.set(labels, batcher.stats.batches)
    },
  })

  const inferStats = { success: { count: 0, ns: 0 }, fail: { count: 0, ns: 0 }, inferences: 0, last: 0 }
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : {}),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: opts.bodyLimitBytes,
    forceCloseConnections: true,
  })
  app.setErrorHandler((err: { statusCode?: number; message?: string }, _req, reply) => {
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 ? err.statusCode : 500
    if (status === 413)
      return fail(reply, 413, `body is larger than ${opts.bodyLimitBytes} bytes`, 'TG_ERR_PAYLOAD_TOO_LARGE')
    if (status < 500) return fail(reply, status, err.message ?? 'bad request')
    return fail(reply, 500, 'internal error', 'TG_ERR_INTERNAL')
  })

  const want = opts.adminToken ? digest(opts.adminToken) : null
  const admin = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!want) return undefined
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')
    if (!m || !timingSafeEqual(digest(m[1]!), want))
      return fail(
        reply.header('www-authenticate', 'Bearer'),
        401,
        'missing or invalid admin bearer token',
        'TG_ERR_UNAUTHORIZED',
      )
    return undefined
  }

  app.get('/v2/health/ready', async () => ({ ready: true }))
  // vLLM's, TGI's and SGLang's health path too (the process actuator's default readiness probe).
  app.get('/health', async () => ({ ready: true }))
  app.get('/v2/health/live', async () => ({ live: true }))
  app.get('/v2', async () => ({ name: 'tailguard-model-server', version: '1', extensions: ['statistics'] }))

  const knownModel = (req: FastifyRequest<{ Params: { m: string } }>, reply: FastifyReply) => {
    if (req.params.m === name) return true
    void fail(
      reply,
      404,
      `unknown model ${JSON.stringify(req.params.m)}: this server serves ${JSON.stringify(name)}`,
      'TG_ERR_NOT_FOUND',
    )
    return false
  }

  app.get<{ Params: { m: string } }>('/v2/models/:m', async (req, reply) => {
    if (!knownModel(req, reply)) return reply
    return {
      name,
      versions: ['1'],
      platform: 'tailguard-cpu-mlp',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [-1, opts.hidden] }],
      outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [-1, model.vocabSize] }],
    }
  })
  app.get<{ Params: { m: string } }>('/v2/models/:m/ready', async (req, reply) => {
    if (!knownModel(req, reply)) return reply
    return { name, ready: true }
  })

  app.post<{ Params: { m: string } }>('/v2/models/:m/infer', async (req, reply) => {
    if (!knownModel(req, reply)) return reply
    const t0 = performance.now()
    const bad = (message: string) => {
      inferStats.fail.count++
      inferStats.fail.ns += Math.round((performance.now() - t0) * 1e6)
      return fail(reply, 400, message)
    }
    const body = req.body as { id?: unknown; inputs?: unknown } | null
    if (!body || typeof body !== 'object' || !Array.isArray(body.inputs) || body.inputs.length !== 1)
      return bad('inputs: expected exactly one input tensor, INPUT0')
    const input = body.inputs[0] as InferInput
    if (input.datatype !== 'FP32')
      return bad(`inputs.0.datatype: expected "FP32", got ${JSON.stringify(input.datatype)}`)
    const shape = input.shape
    if (
      !Array.isArray(shape) ||
      shape.length !== 2 ||
      !Number.isInteger(shape[0]) ||
      (shape[0] as number) < 1 ||
      (shape[0] as number) > 1024 ||
      shape[1] !== opts.hidden
    )
      return bad(
        `inputs.0.shape: expected [n, ${opts.hidden}] with 1 ≤ n ≤ 1024, got ${JSON.stringify(shape)}`,
      )
    const rows = shape[0] as number
    const flat: number[] = []
    if (!flatten(input.data, flat) || flat.length !== rows * opts.hidden || !flat.every(Number.isFinite))
      return bad(`inputs.0.data: expected ${rows * opts.hidden} finite numbers (flat or one array per row)`)
    const logits = await new Promise<Float32Array>((resolve) => {
      const out = new Float32Array(rows * model.vocabSize)
      let left = rows
      for (let r = 0; r < rows; r++) {
        const row = Float32Array.from(flat.slice(r * opts.hidden, (r + 1) * opts.hidden))
        batcher.submit(row, (l, i) => {
          out.set(l.subarray(i * model.vocabSize, (i + 1) * model.vocabSize), r * model.vocabSize)
          if (--left === 0) resolve(out)
        })
      }
    })
    inferStats.success.count++
    inferStats.success.ns += Math.round((performance.now() - t0) * 1e6)
    inferStats.inferences += rows
    inferStats.last = Date.now()
    return {
      model_name: name,
      model_version: '1',
      ...(typeof body.id === 'string' ? { id: body.id } : {}),
      outputs: [
        { name: 'OUTPUT0', datatype: 'FP32', shape: [rows, model.vocabSize], data: Array.from(logits) },
      ],
    }
  })

  app.get<{ Params: { m: string } }>('/v2/models/:m/stats', async (req, reply) => {
    if (!knownModel(req, reply)) return reply
    const s = batcher.stats
    const zero = { count: 0, ns: 0 }
    return {
      model_stats: [
        {
          name,
          version: '1',
          last_inference: inferStats.last,
          inference_count: s.items,
          execution_count: s.batches,
          inference_stats: {
            success: inferStats.success,
            fail: inferStats.fail,
            queue: { count: s.items, ns: s.queueNs },
            compute_input: zero,
            compute_infer: { count: s.batches, ns: s.computeNs },
            compute_output: zero,
          },
          batch_stats: [...s.bySize.entries()]
            .sort((a, b) => a[0] - b[0])
            .map(([size, v]) => ({
              batch_size: size,
              compute_input: zero,
              compute_infer: { count: v.count, ns: v.ns },
              compute_output: zero,
            })),
        },
      ],
    }
  })

  app.get('/v1/models', async () => ({
    object: 'list',
    data: [{ id: name, object: 'model', created: 0, owned_by: 'tailguard' }],
  }))

  app.post('/v1/completions', async (req, reply) => {
    const t0 = performance.now()
    const body = req.body as {
      model?: unknown
      prompt?: unknown
      max_tokens?: unknown
      stream?: unknown
      stream_options?: { include_usage?: unknown }
    } | null
    if (!body || typeof body !== 'object') return fail(reply, 400, 'body: expected a JSON object')
    if (body.model !== undefined && body.model !== name)
      return fail(
        reply,
        404,
        `model: ${JSON.stringify(body.model)} does not exist; this server serves ${JSON.stringify(name)}`,
        'TG_ERR_NOT_FOUND',
      )
    const prompt = body.prompt ?? ''
    if (typeof prompt !== 'string' || prompt.length > 65_536)
      return fail(reply, 400, 'prompt: expected a string of at most 65536 characters')
    const maxTokens = body.max_tokens ?? 16
    if (
      !Number.isInteger(maxTokens) ||
      (maxTokens as number) < 1 ||
      (maxTokens as number) > opts.maxTokensLimit
    )
      return fail(
        reply,
        400,
        `max_tokens: expected an integer 1..${opts.maxTokensLimit}, got ${JSON.stringify(maxTokens)}`,
      )
    const stream = body.stream === true
    const includeUsage = body.stream_options?.include_usage === true
    const id = `cmpl-${randomUUID()}`
    const created = Math.floor(Date.now() / 1000)
    const nPrompt = [...prompt].length
    promptTokens.inc(labels, nPrompt)
    let first = -1
    let last = -1
    let text = ''
    const observeDone = (reason: FinishReason, tokens: number) => {
      const now = performance.now()
      generationTokens.inc(labels, tokens)
      success.inc({ ...labels, finished_reason: reason })
      e2e.observe(labels, (now - t0) / 1000)
      if (tokens > 1 && first >= 0) tpot.observe(labels, (last - first) / 1000 / (tokens - 1))
    }
    const onToken = (t: string) => {
      const now = performance.now()
      if (first < 0) {
        first = now
        ttft.observe(labels, (now - t0) / 1000)
      } else itl.observe(labels, (now - last) / 1000)
      last = now
      text += t
    }
    const scheduled = () => queueTime.observe(labels, (performance.now() - t0) / 1000)

    if (!stream) {
      let handle: { abort(): void } | null = null
      const onClose = () => handle?.abort()
      reply.raw.once('close', onClose)
      const result = await new Promise<{ reason: FinishReason; tokens: number }>((resolve) => {
        handle = engine.generate(prompt, maxTokens as number, {
          onScheduled: scheduled,
          onToken,
          onDone: (reason, tokens) => {
            observeDone(reason, tokens)
            resolve({ reason, tokens })
          },
        })
      })
      reply.raw.off('close', onClose)
      return {
        id,
        object: 'text_completion',
        created,
        model: name,
        choices: [
          { index: 0, text, logprobs: null, finish_reason: result.reason === 'abort' ? 'abort' : 'length' },
        ],
        usage: {
          prompt_tokens: nPrompt,
          completion_tokens: result.tokens,
          total_tokens: nPrompt + result.tokens,
        },
      }
    }

    reply.hijack()
    const res = reply.raw
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    })
    res.flushHeaders()
    const chunk = (choiceText: string, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: 'text_completion', created, model: name, choices: [{ index: 0, text: choiceText, logprobs: null, finish_reason: finish }] })}\n\n`
    const handle = engine.generate(prompt, maxTokens as number, {
      onScheduled: scheduled,
      onToken: (t) => {
        onToken(t)
        if (!res.destroyed) res.write(chunk(t, null))
      },
      onDone: (reason, tokens) => {
        observeDone(reason, tokens)
        if (res.destroyed) return
        res.write(chunk('', reason === 'abort' ? 'abort' : 'length'))
        if (includeUsage)
          res.write(
            `data: ${JSON.stringify({ id, object: 'text_completion', created, model: name, choices: [], usage: { prompt_tokens: nPrompt, completion_tokens: tokens, total_tokens: nPrompt + tokens } })}\n\n`,
          )
        res.end('data: [DONE]\n\n')
      },
    })
    res.once('close', () => {
      if (!res.writableFinished) handle.abort()
    })
    return reply
  })

  app.get('/v1/batching', { preHandler: admin }, async () => batcher.settings)
  app.put('/v1/batching', { preHandler: admin, bodyLimit: 4096 }, async (req, reply) => {
    const body = req.body as { windowMs?: unknown; maxBatch?: unknown } | null
    if (!body || typeof body !== 'object' || Array.isArray(body))
      return fail(reply, 400, 'body: expected { windowMs?, maxBatch? }')
    for (const k of Object.keys(body))
      if (k !== 'windowMs' && k !== 'maxBatch')
        return fail(reply, 400, `${k}: unknown field (windowMs, maxBatch)`)
    const { windowMs, maxBatch } = body
    if (windowMs !== undefined && !(typeof windowMs === 'number' && windowMs >= 0 && windowMs <= 10_000))
      return fail(reply, 400, `windowMs: expected a number 0..10000, got ${JSON.stringify(windowMs)}`)
    if (
      maxBatch !== undefined &&
      !(Number.isInteger(maxBatch) && (maxBatch as number) >= 1 && (maxBatch as number) <= 1024)
    )
      return fail(reply, 400, `maxBatch: expected an integer 1..1024, got ${JSON.stringify(maxBatch)}`)
    return batcher.set({
      ...(windowMs !== undefined ? { windowMs: windowMs as number } : {}),
      ...(maxBatch !== undefined ? { maxBatch: maxBatch as number } : {}),
    })
  })

  app.get('/metrics', async (_req, reply) =>
    reply.header('content-type', registry.contentType).send(await registry.metrics()),
  )

  return {
    app,
    model,
    batcher,
    engine,
    registry,
    async close() {
      batcher.close()
      await app.close()
    },
  }
}
