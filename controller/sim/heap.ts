/**
 * A binary min-heap of events keyed by time, stored in parallel typed arrays (no per-event objects).
 * Ties pop in insertion order (a sequence number breaks them), so runs are deterministic.
 *
 * @example
 * ```ts
 * const h = new EventHeap()
 * h.push(5, 1, 0, 0)
 * h.push(2, 3, 7, 0)
 * h.pop() // 2, with h.kind === 3 and h.id === 7
 * ```
 */
export class EventHeap {
  private times: Float64Array
  private seqs: Float64Array
  private kinds: Int32Array
  private ids: Int32Array
  private auxs: Int32Array
  private n = 0
  private seq = 0
  /** Kind, id and aux of the last popped event. */
  kind = 0
  id = 0
  aux = 0

  /**
   * @example const h = new EventHeap(); h.push(5, 1, 0, 0); h.pop() // 5, with h.kind === 1
   */
  constructor(capacity = 1024) {
    this.times = new Float64Array(capacity)
    this.seqs = new Float64Array(capacity)
    this.kinds = new Int32Array(capacity)
    this.ids = new Int32Array(capacity)
    this.auxs = new Int32Array(capacity)
  }

  get size(): number {
    return this.n
  }

  /** Time of the earliest event, or Infinity when empty. */
  peekTime(): number {
    return this.n > 0 ? this.times[0]! : Infinity
  }

  push(time: number, kind: number, id: number, aux: number): void {
    if (this.n === this.times.length) this.grow()
    let i = this.n++
    const seq = this.seq++
    const times = this.times
    const seqs = this.seqs
    while (i > 0) {
      const p = (i - 1) >> 1
      const pt = times[p]!
      if (pt < time || (pt === time && seqs[p]! < seq)) break
      this.move(p, i)
      i = p
    }
    times[i] = time
    seqs[i] = seq
    this.kinds[i] = kind
    this.ids[i] = id
    this.auxs[i] = aux
  }

  /** Removes the earliest event and returns its time; its kind/id/aux are left in the fields. */
  pop(): number {
    const times = this.times
    const seqs = this.seqs
    const top = times[0]!
    this.kind = this.kinds[0]!
    this.id = this.ids[0]!
    this.aux = this.auxs[0]!
    const last = --this.n
    if (last > 0) {
      const t = times[last]!
      const s = seqs[last]!
      const k = this.kinds[last]!
      const id = this.ids[last]!
      const aux = this.auxs[last]!
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        if (l >= last) break
        const r = l + 1
        let c = l
        if (r < last && (times[r]! < times[l]! || (times[r] === times[l] && seqs[r]! < seqs[l]!))) c = r
        const ct = times[c]!
        if (ct > t || (ct === t && seqs[c]! > s)) break
        this.move(c, i)
        i = c
      }
      times[i] = t
      seqs[i] = s
      this.kinds[i] = k
      this.ids[i] = id
      this.auxs[i] = aux
    }
    return top
  }

  private move(from: number, to: number): void {
    this.times[to] = this.times[from]!
    this.seqs[to] = this.seqs[from]!
    this.kinds[to] = this.kinds[from]!
    this.ids[to] = this.ids[from]!
    this.auxs[to] = this.auxs[from]!
  }

  private grow(): void {
    const cap = this.times.length * 2
    const g64 = (a: Float64Array) => {
      const b = new Float64Array(cap)
      b.set(a)
      return b
    }
    const g32 = (a: Int32Array) => {
      const b = new Int32Array(cap)
      b.set(a)
      return b
    }
    this.times = g64(this.times)
    this.seqs = g64(this.seqs)
    this.kinds = g32(this.kinds)
    this.ids = g32(this.ids)
    this.auxs = g32(this.auxs)
  }
}
