import type { EventHeap } from './heap.js'

/**
 * Replicas and KV cache of the simulator: replica states and the fleet's lifecycle (cold start, drain,
 * retire, GPU-time integration), and the two KV-cache models of LLM replicas.
 */

export const ST_STARTING = 0
export const ST_IDLE = 1
export const ST_BUSY = 2
export const ST_GONE = 3

/** Most requests in one batch (or sequences running on one LLM replica). */
export const BATCH_CAP = 4096

/** Heap event kind of a replica becoming ready (the simulator owns the other kinds). */
export const EV_READY = 3

/**
 * One replica: its state, the requests it serves (slots), and its KV cache in tokens (reserve) or blocks (paged).
 *
 * @example const r = new Replica(0); r.seqs[r.n++] = slot
 */
export class Replica {
  state = ST_STARTING
  /** Bumped on retire so that stale events of a removed replica are ignored. */
  epoch = 0
  draining = false
  n = 0
  /** KV in use: tokens (reserve) or blocks (paged). */
  kvUsed = 0
  readonly seqs = new Int32Array(BATCH_CAP)
  constructor(readonly id: number) {}
}

/**
 * How KV cache is held: `reserve` takes a sequence's prompt + output tokens when it is admitted (nothing can
 * run out later); `paged` takes blocks of `blockTokens` as tokens are written (prompt at admission, one block
 * each time generation fills the last), and preempts the most recently admitted sequence when a block is
 * needed and none is free (it is queued again and recomputes its prompt and generated tokens).
 */
export type KvModel = { readonly kind: 'reserve' } | { readonly kind: 'paged'; readonly blockTokens: number }

/**
 * KV accounting for one replica model: capacity, what a sequence needs to be admitted, and what it holds.
 *
 * @example const kv = new KvCache({ kind: 'paged', blockTokens: 16 }, 100_000); kv.admitNeed(1000, 200, 0) // 63 blocks
 */
export class KvCache {
  /** Capacity in the model's units (tokens or blocks). */
  readonly capacity: number
  readonly paged: boolean
  private readonly block: number

  constructor(model: KvModel, capacityTokens: number) {
    this.paged = model.kind === 'paged'
    this.block = this.paged ? Math.max(1, Math.floor((model as { blockTokens: number }).blockTokens)) : 1
    this.capacity = this.paged ? Math.floor(capacityTokens / this.block) : capacityTokens
  }

  /** Units a sequence needs to be admitted: all its tokens (reserve), or blocks for what it holds plus one. */
  admitNeed(inTok: number, outTok: number, generated: number): number {
    if (!this.paged) return inTok + outTok
    return Math.ceil((inTok + generated) / this.block) + 1
  }

  /** True when a sequence can never fit, even on an empty replica. */
  tooLarge(inTok: number, outTok: number): boolean {
    return this.paged ? Math.ceil(inTok / this.block) + 1 > this.capacity : inTok + outTok > this.capacity
  }

  /** Units a sequence holding `tokens` tokens (prompt and generated) occupies. */
  blocksHeld(tokens: number): number {
    return this.paged ? Math.ceil(tokens / this.block) : tokens
  }
}

/**
 * The fleet: replicas by id, the live (not retired) and idle ones, ready and alive counts, GPU time.
 *
 * @example const fleet = new Fleet(heap, 90_000); fleet.add(true, 0)
 */
export class Fleet {
  readonly all: Replica[] = []
  live: Replica[] = []
  idle: Replica[] = []
  alive = 0
  readyCount = 0
  /** Replica-ms alive (billed: starting and idle included) and ready, integrated over time. */
  gpuMs = 0
  readyMs = 0
  private lastAliveChange = 0
  private lastReadyChange = 0

  constructor(
    private readonly heap: EventHeap,
    private readonly coldMs: number,
  ) {}

  integrateGpu(now: number): void {
    this.gpuMs += this.alive * (now - this.lastAliveChange)
    this.lastAliveChange = now
  }

  integrateReady(now: number): void {
    this.readyMs += this.readyCount * (now - this.lastReadyChange)
    this.lastReadyChange = now
  }

  /** Adds a replica, ready at once or after the cold start. */
  add(ready: boolean, now: number): void {
    const r = new Replica(this.all.length)
    this.all.push(r)
    this.live.push(r)
    this.integrateGpu(now)
    this.alive++
    if (ready) this.markReady(r, now)
    else {
      r.state = ST_STARTING
      this.heap.push(now + this.coldMs, EV_READY, r.id, r.epoch)
    }
  }

  /** A starting replica becomes ready (idle). */
  markReady(r: Replica, now: number): void {
    this.integrateReady(now)
    r.state = ST_IDLE
    this.readyCount++
    this.idle.push(r)
  }

  retire(r: Replica, now: number): void {
    this.integrateGpu(now)
    this.alive--
    if (r.state === ST_IDLE || r.state === ST_BUSY) {
      this.integrateReady(now)
      this.readyCount--
    }
    r.state = ST_GONE
    r.epoch++
    r.draining = false
    this.live = this.live.filter((x) => x !== r)
  }

  /** After a replica's work: retire it when draining, else make it idle. */
  afterWork(r: Replica, now: number): void {
    if (r.draining) this.retire(r, now)
    else {
      r.state = ST_IDLE
      this.idle.push(r)
    }
  }

  /**
   * Moves toward `desired` replicas: un-drains, then adds (cold start); or removes starting replicas (newest
   * first), then idle ones, then drains busy ones (they finish their work first).
   */
  scaleTo(desired: number, now: number): void {
    let active = 0
    for (const r of this.live) if (!r.draining) active++
    if (desired > active) {
      for (const r of this.live) {
        if (active >= desired) break
        if (r.draining) {
          r.draining = false
          active++
        }
      }
      while (active < desired) {
        this.add(false, now)
        active++
      }
    } else if (desired < active) {
      let excess = active - desired
      const byPreference = [
        ...this.live.filter((r) => r.state === ST_STARTING).reverse(),
        ...this.live.filter((r) => r.state === ST_IDLE),
        ...this.live.filter((r) => r.state === ST_BUSY && !r.draining),
      ]
      for (const r of byPreference) {
        if (excess === 0) break
        excess--
        if (r.state === ST_BUSY) r.draining = true
        else this.retire(r, now)
      }
      this.idle = this.live.filter((r) => r.state === ST_IDLE)
    }
  }

  /** Ready (not draining) and starting replicas now. */
  counts(): { ready: number; starting: number } {
    let ready = 0
    let starting = 0
    for (const r of this.live) {
      if (r.state === ST_STARTING) starting++
      else if (!r.draining) ready++
    }
    return { ready, starting }
  }

  /** Mean KV occupancy of ready replicas, 0..1. */
  kvUsage(capacity: number): number {
    let used = 0
    let ready = 0
    for (const r of this.live)
      if (r.state === ST_IDLE || r.state === ST_BUSY) {
        used += r.kvUsed
        ready++
      }
    return ready > 0 && Number.isFinite(capacity) && capacity > 0 ? used / (ready * capacity) : 0
  }
}
