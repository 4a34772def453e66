import type { Batcher } from './batcher.js'
import { argmax, VOCAB } from './mlp.js'
import type { Mlp } from './mlp.js'

/** Why a generation ended: it produced `max_tokens` (`length`) or its client went away (`abort`). */
export type FinishReason = 'length' | 'abort'

/** Callbacks of one generation. */
export interface GenerationHooks {
  /** Called once the request has a slot (prefill starts). */
  onScheduled?(): void
  onToken(text: string, index: number): void
  onDone(reason: FinishReason, completionTokens: number): void
}

/**
 * Iteration-level scheduling for text generation, as vLLM does it: up to `maxRunning` sequences run at
 * once, each step of each sequence is one item of the dynamic batcher (so sequences that arrive at
 * different times share forward passes), the rest wait. The KV cache is modelled as tokens held by
 * running sequences over a capacity.
 *
 * @example
 * ```ts
 * const engine = createEngine(model, batcher, { maxRunning: 64, kvCapacityTokens: 16384 })
 * const handle = engine.generate('Hello', 16, { onToken: (t) => res.write(t), onDone: () => res.end() })
 * handle.abort() // the client went away
 * ```
 */
export interface Engine {
  generate(prompt: string, maxTokens: number, hooks: GenerationHooks): { abort(): void }
  /** Sequences generating now. */
  readonly running: number
  /** Requests waiting for a slot. */
  readonly waiting: number
  /** Fraction (0..1) of the modelled KV cache held by running sequences. */
  readonly kvCacheUsage: number
}

/** Token ids of a prompt in the model's character vocabulary. @example tokenize('hi') // [7, 8] */
export function tokenize(prompt: string): number[] {
  const out: number[] = []
  for (const ch of prompt) {
    const i = VOCAB.indexOf(ch)
    out.push(i >= 0 ? i : ch.codePointAt(0)! % VOCAB.length)
  }
  return out
}

/**
 * Makes an {@link Engine}.
 *
 * @example const engine = createEngine(model, batcher, { maxRunning: 64, kvCapacityTokens: 16384 })
 */
export function createEngine(
  model: Mlp,
  batcher: Batcher,
  opts: { readonly maxRunning: number; readonly kvCapacityTokens: number },
): Engine {
  const h = model.shape.hidden
  const v = model.vocabSize
  let running = 0
  let kvTokens = 0
  const waitingQueue: Array<() => void> = []

  function release(tokens: number): void {
    running--
    kvTokens -= tokens
    const next = waitingQueue.shift()
    if (next) next()
  }

  return {
    generate(prompt, maxTokens, hooks) {
      let aborted = false
      let started = false
      const start = () => {
        started = true
        if (aborted) return
        running++
        hooks.onScheduled?.()
        const promptTokens = tokenize(prompt)
        let held = Math.max(1, promptTokens.length)
        kvTokens += held
        // Prefill: the prompt's embeddings, averaged into one input row.
        const row = new Float32Array(h)
        const tmp = new Float32Array(h)
        const toks = promptTokens.length > 0 ? promptTokens : [0]
        for (let p = 0; p < toks.length; p++) {
          model.embed(toks[p]!, p, tmp, 0)
          for (let k = 0; k < h; k++) row[k]! += tmp[k]! / toks.length
        }
        let generated = 0
        const step = (logits: Float32Array, r: number) => {
          if (aborted) {
            release(held)
            hooks.onDone('abort', generated)
            return
          }
          const token = argmax(logits, r, v)
          hooks.onToken(VOCAB[token]!, generated)
          generated++
          held++
          kvTokens++
          if (generated >= maxTokens) {
            release(held)
            hooks.onDone('length', generated)
            return
          }
          const next = new Float32Array(h)
          model.embed(token, toks.length + generated, next, 0)
          batcher.submit(next, step)
        }
        batcher.submit(row, step)
      }
      if (running < opts.maxRunning) start()
      else waitingQueue.push(start)
      return {
        abort() {
          if (aborted) return
          aborted = true
          if (!started) {
            const i = waitingQueue.indexOf(start)
            if (i >= 0) waitingQueue.splice(i, 1)
            hooks.onDone('abort', 0)
          }
        },
      }
    },
    get running() {
      return running
    },
    get waiting() {
      return waitingQueue.length
    },
    get kvCacheUsage() {
      return Math.min(1, kvTokens / opts.kvCapacityTokens)
    },
  }
}
