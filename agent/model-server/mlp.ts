/** The characters the reference model speaks: its whole vocabulary (token id = index). */
export const VOCAB = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,!?\n'

/**
 * Shape of the reference model.
 *
 * @example
 * ```ts
 * const shape: MlpShape = { hidden: 1024, layers: 2, seed: 1 }
 * ```
 */
export interface MlpShape {
  /** Width of every hidden layer (and of the input vectors KServe requests send). */
  readonly hidden: number
  readonly layers: number
  readonly seed: number
}

/**
 * A small multilayer perceptron run on the CPU: `layers` dense layers of hidden×hidden with ReLU, then a
 * projection onto the {@link VOCAB}, with 4-bit quantized weights and Float32Array activations. Its
 * batched forward pass reads and dequantizes each weight once per batch and multiplies it into up to 8
 * rows held in registers, so a batch of 16 costs far less than 16 batches of one: the same reason batching
 * pays on a GPU (weights are read once per step).
 *
 * @example
 * ```ts
 * const m = createMlp({ hidden: 1024, layers: 2, seed: 1 })
 * const logits = m.forward(new Float32Array(4 * 1024), 4) // 4 × VOCAB.length
 * ```
 */
export interface Mlp {
  readonly shape: MlpShape
  readonly vocabSize: number
  /** Runs `batch` input rows (row-major, `batch × hidden`); returns `batch × vocabSize` logits. */
  forward(input: Float32Array, batch: number): Float32Array
  /** The input vector of a token at a position (its embedding plus a position signal). */
  embed(token: number, position: number, out: Float32Array, offset: number): void
}

/** Mulberry32: seeded, so every replica of the model has the same weights. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Weights per quantization group (each group has its own scale and zero point), as GPTQ's default 128 … 32. */
const GROUP = 32

/**
 * One dense layer with 4-bit weights in GPTQ's layout: two per byte (low nibble first), and per group of
 * {@link GROUP} weights of a row a scale and a zero point: w = (q − zero) · scale.
 */
interface Int4Layer {
  readonly rows: number
  readonly width: number
  readonly packed: Uint8Array
  readonly scales: Float32Array
  readonly zeros: Float32Array
}

function randomLayer(rows: number, width: number, rand: () => number): Int4Layer {
  const packed = new Uint8Array((rows * width) >> 1)
  for (let i = 0; i < packed.length; i++) packed[i] = (rand() * 256) | 0
  const groups = rows * (width / GROUP)
  const scales = new Float32Array(groups)
  const zeros = new Float32Array(groups)
  // Around Xavier's range for this width, each group a little different.
  const base = Math.sqrt(6 / (2 * width)) / 8
  for (let g = 0; g < groups; g++) {
    scales[g] = base * (0.75 + 0.5 * rand())
    zeros[g] = 7 + rand()
  }
  return { rows, width, packed, scales, zeros }
}

/**
 * `out[b, j] = act(Σ_k in[b, k] · w[j, k])` with 4-bit weights, as weight-only quantized LLMs are served
 * (GPTQ, AWQ): each weight row is dequantized once per forward pass into `scratch`, then multiplied into
 * every row of the batch, eight batch rows per weight load (then four, then one). The dequantization and
 * the weight reads are paid once per batch, which is why a batch of 16 costs far less than 16 of one.
 */
function dense(
  layer: Int4Layer,
  scratch: Float32Array,
  inp: Float32Array,
  out: Float32Array,
  batch: number,
  relu: boolean,
): void {
  const { rows, width, packed, scales, zeros } = layer
  const half = width >> 1
  const groups = width / GROUP
  for (let j = 0; j < rows; j++) {
    for (let g = 0; g < groups; g++) {
      const s = scales[j * groups + g]!
      const z = zeros[j * groups + g]!
      const from = (j * half + (g * GROUP) / 2) | 0
      const to = g * GROUP
      for (let k = 0; k < GROUP / 2; k++) {
        const byte = packed[from + k]!
        scratch[to + 2 * k] = ((byte & 15) - z) * s
        scratch[to + 2 * k + 1] = ((byte >> 4) - z) * s
      }
    }
    let b = 0
    for (; b + 8 <= batch; b += 8) {
      const o0 = b * width
      const o1 = o0 + width
      const o2 = o1 + width
      const o3 = o2 + width
      const o4 = o3 + width
      const o5 = o4 + width
      const o6 = o5 + width
      const o7 = o6 + width
      let a0 = 0
      let a1 = 0
      let a2 = 0
      let a3 = 0
      let a4 = 0
      let a5 = 0
      let a6 = 0
      let a7 = 0
      for (let k = 0; k < width; k++) {
        const wv = scratch[k]!
        a0 += inp[o0 + k]! * wv
        a1 += inp[o1 + k]! * wv
        a2 += inp[o2 + k]! * wv
        a3 += inp[o3 + k]! * wv
        a4 += inp[o4 + k]! * wv
        a5 += inp[o5 + k]! * wv
        a6 += inp[o6 + k]! * wv
        a7 += inp[o7 + k]! * wv
      }
      const r = b * rows + j
      out[r] = relu && a0 < 0 ? 0 : a0
      out[r + rows] = relu && a1 < 0 ? 0 : a1
      out[r + 2 * rows] = relu && a2 < 0 ? 0 : a2
      out[r + 3 * rows] = relu && a3 < 0 ? 0 : a3
      out[r + 4 * rows] = relu && a4 < 0 ? 0 : a4
      out[r + 5 * rows] = relu && a5 < 0 ? 0 : a5
      out[r + 6 * rows] = relu && a6 < 0 ? 0 : a6
      out[r + 7 * rows] = relu && a7 < 0 ? 0 : a7
    }
    for (; b + 4 <= batch; b += 4) {
      const o0 = b * width
      const o1 = o0 + width
      const o2 = o1 + width
      const o3 = o2 + width
      let a0 = 0
      let a1 = 0
      let a2 = 0
      let a3 = 0
      for (let k = 0; k < width; k++) {
        const wv = scratch[k]!
        a0 += inp[o0 + k]! * wv
        a1 += inp[o1 + k]! * wv
        a2 += inp[o2 + k]! * wv
        a3 += inp[o3 + k]! * wv
      }
      const r = b * rows + j
      out[r] = relu && a0 < 0 ? 0 : a0
      out[r + rows] = relu && a1 < 0 ? 0 : a1
      out[r + 2 * rows] = relu && a2 < 0 ? 0 : a2
      out[r + 3 * rows] = relu && a3 < 0 ? 0 : a3
    }
    for (; b < batch; b++) {
      const o = b * width
      let a = 0
      for (let k = 0; k < width; k++) a += inp[o + k]! * scratch[k]!
      out[b * rows + j] = relu && a < 0 ? 0 : a
    }
  }
}

/**
 * Makes the reference model with seeded random weights (Xavier-scaled).
 *
 * @example const m = createMlp({ hidden: 256, layers: 2, seed: 7 })
 */
export function createMlp(shape: MlpShape): Mlp {
  const { hidden: h, layers } = shape
  if (!(Number.isInteger(h) && h >= GROUP && h <= 8192))
    throw new Error(`hidden: expected ${GROUP}..8192, got ${h}`)
  if (!(Number.isInteger(layers) && layers >= 1 && layers <= 64))
    throw new Error(`layers: expected 1..64, got ${layers}`)
  if (h % GROUP !== 0) throw new Error(`hidden: expected a multiple of ${GROUP}, got ${h}`)
  const rand = rng(shape.seed)
  const weights: Int4Layer[] = []
  for (let l = 0; l < layers; l++) weights.push(randomLayer(h, h, rand))
  const v = VOCAB.length
  const head = randomLayer(v, h, rand)
  const scratch = new Float32Array(h)
  const embedding = new Float32Array(v * h)
  for (let i = 0; i < embedding.length; i++) embedding[i] = rand() * 2 - 1
  return {
    shape,
    vocabSize: v,
    forward(input, batch) {
      if (input.length < batch * h)
        throw new Error(`forward: expected ${batch}×${h} inputs, got ${input.length}`)
      let a: Float32Array = input
      let b: Float32Array = new Float32Array(batch * h)
      let spare: Float32Array | null = null
      for (const w of weights) {
        dense(w, scratch, a, b, batch, true)
        const t = a
        a = b
        b = t === input ? (spare ??= new Float32Array(batch * h)) : t
      }
      const logits = new Float32Array(batch * v)
      dense(head, scratch, a, logits, batch, false)
      return logits
    },
    embed(token, position, out, offset) {
      const t = ((token % v) + v) % v
      for (let k = 0; k < h; k++)
        out[offset + k] = embedding[t * h + k]! + 0.5 * Math.sin((position + 1) * (k + 1) * 0.01)
    },
  }
}

/** The most likely token of row `b` of `logits`. @example argmax(logits, 0, VOCAB.length) */
export function argmax(logits: Float32Array, b: number, vocabSize: number): number {
  let best = 0
  let bestV = -Infinity
  const o = b * vocabSize
  for (let i = 0; i < vocabSize; i++) {
    const x = logits[o + i]!
    if (x > bestV) {
      bestV = x
      best = i
    }
  }
  return best
}
