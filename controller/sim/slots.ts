/**
 * Request slots of the simulator, struct-of-arrays: one typed array per field, indexed by slot, reused through a
 * free list, so a run of millions of requests allocates nothing per request.
 */

/**
 * The fields of every request in the system, by slot.
 *
 * @example const slots = new RequestSlots(); const s = slots.alloc(); slots.arrivalMs[s] = 12.5; slots.release(s)
 */
export class RequestSlots {
  private cap: number
  /** Arrival time, start of (first) service, time of the first token, ms. */
  arrivalMs: Float64Array
  startMs: Float64Array
  firstTokMs: Float64Array
  /** Prompt and output tokens, tokens generated so far, KV blocks held (paged KV). */
  inTok: Int32Array
  outTok: Int32Array
  generated: Int32Array
  blocks: Int32Array
  /** Priority class, and 1 when the request was preempted (it is queued again with its progress). */
  cls: Uint8Array
  preempted: Uint8Array
  private free: Int32Array
  private freeTop = 0
  private used = 0

  constructor(capacity = 1 << 14) {
    this.cap = capacity
    this.arrivalMs = new Float64Array(capacity)
    this.startMs = new Float64Array(capacity)
    this.firstTokMs = new Float64Array(capacity)
    this.inTok = new Int32Array(capacity)
    this.outTok = new Int32Array(capacity)
    this.generated = new Int32Array(capacity)
    this.blocks = new Int32Array(capacity)
    this.cls = new Uint8Array(capacity)
    this.preempted = new Uint8Array(capacity)
    this.free = new Int32Array(capacity)
  }

  /** Slots in use now. */
  get inUse(): number {
    return this.used - this.freeTop
  }

  /** A free slot (its fields hold stale values: the caller sets them). Typed arrays may be replaced: re-read them. */
  alloc(): number {
    if (this.freeTop > 0) return this.free[--this.freeTop]!
    if (this.used === this.cap) this.grow()
    return this.used++
  }

  release(s: number): void {
    this.free[this.freeTop++] = s
  }

  private grow(): void {
    const cap = this.cap * 2
    const f64 = (a: Float64Array) => {
      const b = new Float64Array(cap)
      b.set(a)
      return b
    }
    const i32 = (a: Int32Array) => {
      const b = new Int32Array(cap)
      b.set(a)
      return b
    }
    const u8 = (a: Uint8Array) => {
      const b = new Uint8Array(cap)
      b.set(a)
      return b
    }
    this.arrivalMs = f64(this.arrivalMs)
    this.startMs = f64(this.startMs)
    this.firstTokMs = f64(this.firstTokMs)
    this.inTok = i32(this.inTok)
    this.outTok = i32(this.outTok)
    this.generated = i32(this.generated)
    this.blocks = i32(this.blocks)
    this.cls = u8(this.cls)
    this.preempted = u8(this.preempted)
    this.free = i32(this.free)
    this.cap = cap
  }
}
