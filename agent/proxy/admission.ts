import type { ClassSignals } from '../../collector/index.js'
import { GaugeFold } from './gauge.js'
import type { GaugeStat } from './gauge.js'
import { Gradient2Limit } from './gradient2.js'
import type { Gradient2Options } from './gradient2.js'

/**
 * The admission limits of one priority class (contract 2 of the brief: the items of `/v1/setpoints`).
 * Class 0 is the most important; higher numbers are served after lower ones.
 *
 * @example
 * ```ts
 * const interactive: ClassSetpoint = { priorityClass: 0, maxConcurrency: 32, maxQueue: 64, queueTimeoutMs: 500 }
 * ```
 */
export interface ClassSetpoint {
  readonly priorityClass: number
  /** Requests of this class in flight upstream at once. */
  readonly maxConcurrency: number
  /** Requests of this class waiting in the proxy; 0 sheds at once when the class is at its cap. */
  readonly maxQueue: number
  /** Longest wait in the queue before the request is shed. */
  readonly queueTimeoutMs: number
}

/**
 * Why a request was shed: its class's queue was full (`queue_full`), it had no queue and no free slot
 * (`concurrency`), it waited longer than the queue timeout (`queue_timeout`), or it could not finish before
 * its deadline (`deadline`).
 */
export type ShedReason = 'queue_full' | 'concurrency' | 'queue_timeout' | 'deadline'

/** What the admission controller decided for one request (STYLE.md section 6: a value, never a throw). */
export type Decision =
  | { readonly kind: 'admit'; readonly queuedMs: number; readonly ticket: Ticket }
  | {
      readonly kind: 'shed'
      readonly reason: ShedReason
      readonly queuedMs: number
      readonly retryAfterS: number
    }

/** An admitted request's slot: release it exactly once when the upstream exchange is over. */
export interface Ticket {
  /** The class the request was counted under. */
  readonly priorityClass: number
  /** `serviceMs` is the upstream time of a successful request (it feeds Gradient2); null for failures. */
  release(serviceMs: number | null): void
}

/** A request's place in the queue (or a decision already made): cancel when the client goes away. */
export interface Pending {
  cancel(): void
}

/**
 * Options of {@link createAdmission}.
 *
 * @example
 * ```ts
 * createAdmission({ classes: [{ priorityClass: 0, maxConcurrency: 64, maxQueue: 128, queueTimeoutMs: 1000 }], gradient2: {} })
 * ```
 */
export interface AdmissionOptions {
  readonly classes: readonly ClassSetpoint[]
  /** A local Gradient2 limit on all classes together, until {@link Admission.setClasses} is called with `controlled`. */
  readonly gradient2?: Gradient2Options | null
  readonly clock?: () => number
}

/** Cumulative counts since start, for /metrics. */
export interface AdmissionTotals {
  readonly admitted: ReadonlyMap<number, number>
  readonly shed: ReadonlyMap<string, number>
}

/**
 * Per-class admission control: a concurrency cap, a bounded queue with a timeout, deadline-aware drops, and
 * the most important class served first whenever a slot frees up. Setpoints change at runtime without
 * touching requests already in flight: a lower cap only stops new admissions until enough have finished.
 *
 * @example
 * ```ts
 * const adm = createAdmission({ classes: [{ priorityClass: 0, maxConcurrency: 8, maxQueue: 16, queueTimeoutMs: 500 }] })
 * adm.request(0, undefined, (d) => { if (d.kind === 'admit') forward().finally(() => d.ticket.release(12)) })
 * ```
 */
export interface Admission {
  /**
   * Asks for a slot for a request of `priorityClass` (an unknown class is counted under the nearest listed
   * class of lower priority). `deadlineMs` is the time the client still allows, or undefined. `decide` is
   * called exactly once, synchronously when no wait is needed, unless the request is cancelled first.
   */
  request(priorityClass: number, deadlineMs: number | undefined, decide: (d: Decision) => void): Pending
  /**
   * The common case of {@link request} without its callback: a ticket when the request would be admitted at
   * once (a free slot and nothing waiting ahead of it), else null, and nothing is counted; then call
   * `request`, which queues or sheds it.
   *
   * @example
   * ```ts
   * const ticket = adm.tryAdmit(0, undefined)
   * if (ticket) forward().finally(() => ticket.release(12))
   * else adm.request(0, undefined, decide)
   * ```
   */
  tryAdmit(priorityClass: number, deadlineMs: number | undefined): Ticket | null
  /** Replaces the class setpoints; `controlled` turns the local Gradient2 limit off (a controller decides). */
  setClasses(classes: readonly ClassSetpoint[], controlled: boolean): void
  readonly classes: readonly ClassSetpoint[]
  /** The Gradient2 limit in force, or null when none applies. */
  readonly limit: number | null
  readonly inFlight: number
  readonly queued: number
  /** The interval's gauges and per-class counts (min/mean/max/last), then a new interval starts. */
  takeSignals(): { inFlight: GaugeStat; queued: GaugeStat; byClass: ClassSignals[] }
  totals(): AdmissionTotals
}

interface Waiter {
  readonly decide: (d: Decision) => void
  readonly enqueuedAt: number
  readonly cls: number
  timer: NodeJS.Timeout | null
  done: boolean
  /** The class queue the waiter sits in (the class its `cls` resolved to then; a later class may change that). */
  state: ClassState | null
}

class ClassState {
  sp: ClassSetpoint
  inFlight = 0
  queue: Waiter[] = []
  head = 0
  admitted = 0
  shed = new Map<ShedReason, number>()
  readonly inFlightGauge: GaugeFold
  readonly queuedGauge: GaugeFold
  queuedCount = 0

  constructor(sp: ClassSetpoint, now: number) {
    this.sp = sp
    this.inFlightGauge = new GaugeFold(now)
    this.queuedGauge = new GaugeFold(now)
  }

  get waiting(): number {
    return this.queuedCount
  }

  push(w: Waiter): void {
    w.state = this
    this.queue.push(w)
    this.queuedCount++
  }

  /** The first live waiter, removed from the queue; undefined when none. */
  shift(): Waiter | undefined {
    while (this.head < this.queue.length) {
      const w = this.queue[this.head]!
      this.queue[this.head++] = undefined as unknown as Waiter
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head)
        this.head = 0
      }
      if (!w.done) {
        this.queuedCount--
        return w
      }
    }
    this.queue = []
    this.head = 0
    return undefined
  }

  /** Live waiters, in order (for re-homing when the class goes away). */
  drainAll(): Waiter[] {
    const out = this.queue.slice(this.head).filter((w) => !w.done)
    this.queue = []
    this.head = 0
    this.queuedCount = 0
    return out
  }
}

const NO_PENDING: Pending = { cancel() {} }

/** A slot held by one admitted request; a class rather than a closure, as the proxy makes one per request. */
class AdmissionTicket implements Ticket {
  #released = false

  constructor(
    readonly priorityClass: number,
    readonly state: ClassState,
    readonly owner: AdmissionImpl,
  ) {}

  release(serviceMs: number | null): void {
    if (this.#released) return
    this.#released = true
    this.owner.releaseSlot(this.state, serviceMs)
  }
}

class AdmissionImpl implements Admission {
  readonly #clock: () => number
  readonly #gradient2: Gradient2Limit | null
  #controlled = false
  #byClass = new Map<number, ClassState>()
  /** Listed classes, most important first. */
  #order: ClassState[] = []
  #resolveCache = new Map<number, ClassState>()
  /** Every state that may still hold requests (listed, or removed with requests in flight). */
  #all = new Set<ClassState>()
  #inFlight = 0
  #queued = 0
  readonly #inFlightGauge: GaugeFold
  readonly #queuedGauge: GaugeFold
  #serviceEwmaMs = 0
  readonly #totalAdmitted = new Map<number, number>()
  readonly #totalShed = new Map<string, number>()

  constructor(opts: AdmissionOptions) {
    this.#clock = opts.clock ?? (() => performance.now())
    this.#gradient2 = opts.gradient2 ? new Gradient2Limit(opts.gradient2) : null
    const now = this.#clock()
    this.#inFlightGauge = new GaugeFold(now)
    this.#queuedGauge = new GaugeFold(now)
    this.setClasses(opts.classes, false)
  }

  get classes(): readonly ClassSetpoint[] {
    return this.#order.map((s) => s.sp)
  }

  get limit(): number | null {
    return this.#gradient2 && !this.#controlled ? this.#gradient2.limit : null
  }

  get inFlight(): number {
    return this.#inFlight
  }

  get queued(): number {
    return this.#queued
  }

  setClasses(classes: readonly ClassSetpoint[], controlled: boolean): void {
    if (classes.length === 0) throw new Error('admission needs at least one class')
    const now = this.#clock()
    const next = new Map<number, ClassState>()
    for (const sp of classes) {
      const s = this.#byClass.get(sp.priorityClass) ?? new ClassState(sp, now)
      s.sp = { ...sp }
      next.set(sp.priorityClass, s)
      this.#all.add(s)
    }
    const removed = [...this.#byClass.values()].filter((s) => !next.has(s.sp.priorityClass))
    this.#byClass = next
    this.#order = [...next.values()].sort((a, b) => a.sp.priorityClass - b.sp.priorityClass)
    this.#resolveCache.clear()
    if (controlled) this.#controlled = true
    // Waiters of a class that is gone move, in order, to the class they now resolve to.
    for (const s of removed) {
      for (const w of s.drainAll()) this.#resolve(w.cls).push(w)
      s.queuedGauge.set(0, now)
    }
    for (const s of this.#order) s.queuedGauge.set(s.waiting, now)
    this.#pump()
  }

  #resolve(cls: number): ClassState {
    let s = this.#resolveCache.get(cls)
    if (s !== undefined) return s
    s = this.#byClass.get(cls)
    if (s === undefined) {
      s = this.#order.find((o) => o.sp.priorityClass > cls) ?? this.#order[this.#order.length - 1]!
    }
    if (this.#resolveCache.size < 64) this.#resolveCache.set(cls, s)
    return s
  }

  #globalFree(): boolean {
    const limit = this.limit
    return limit === null || this.#inFlight < limit
  }

  /** True when a class at least as important as `s` has requests that wait only for the global limit (or `s` has any). */
  #blockedByQueue(s: ClassState): boolean {
    for (const o of this.#order) {
      if (o.waiting > 0 && (o === s || o.inFlight < o.sp.maxConcurrency)) return true
      if (o === s) return false
    }
    return false
  }

  /** A free slot in the class and overall, and nothing of this class or a more important one waiting for it. */
  #admitsAtOnce(s: ClassState): boolean {
    return s.inFlight < s.sp.maxConcurrency && this.#globalFree() && !this.#blockedByQueue(s)
  }

  tryAdmit(priorityClass: number, deadlineMs: number | undefined): Ticket | null {
    if (deadlineMs !== undefined && !(deadlineMs > 0)) return null
    const s = this.#resolve(priorityClass)
    return this.#admitsAtOnce(s) ? this.#admitTicket(s, this.#clock()) : null
  }

  request(priorityClass: number, deadlineMs: number | undefined, decide: (d: Decision) => void): Pending {
    const s = this.#resolve(priorityClass)
    const now = this.#clock()
    if (deadlineMs !== undefined && !(deadlineMs > 0)) {
      this.#shed(s, 'deadline', 0, decide)
      return NO_PENDING
    }
    if (this.#admitsAtOnce(s)) {
      decide({ kind: 'admit', queuedMs: 0, ticket: this.#admitTicket(s, now) })
      return NO_PENDING
    }
    if (s.waiting >= s.sp.maxQueue) {
      this.#shed(s, s.sp.maxQueue === 0 ? 'concurrency' : 'queue_full', 0, decide)
      return NO_PENDING
    }
    let timeoutMs = s.sp.queueTimeoutMs
    let timeoutReason: ShedReason = 'queue_timeout'
    if (deadlineMs !== undefined) {
      const svc = this.#serviceEwmaMs
      // Expected wait: the requests ahead of this one, served `slots` at a time, one service time each.
      const slots = Math.max(1, Math.min(s.sp.maxConcurrency, this.limit ?? Infinity))
      const ahead = this.#queuedAhead(s)
      if (svc > 0 && Math.ceil((ahead + 1) / slots) * svc + svc > deadlineMs) {
        this.#shed(s, 'deadline', 0, decide)
        return NO_PENDING
      }
      if (deadlineMs - svc < timeoutMs) {
        timeoutMs = deadlineMs - svc
        timeoutReason = 'deadline'
      }
    }
    const w: Waiter = { decide, enqueuedAt: now, cls: priorityClass, timer: null, done: false, state: null }
    w.timer = setTimeout(() => this.#expire(w, timeoutReason), Math.max(0, timeoutMs))
    w.timer.unref?.()
    s.push(w)
    this.#queued++
    this.#queuedGauge.set(this.#queued, now)
    s.queuedGauge.set(s.waiting, now)
    return {
      cancel: () => {
        if (w.done) return
        this.#dequeue(w)
      },
    }
  }

  #queuedAhead(s: ClassState): number {
    let n = 0
    for (const o of this.#order) {
      n += o.waiting
      if (o === s) break
    }
    return n
  }

  /** Takes a waiter out of the queue count (it stays in the array, marked done, until shifted past). */
  #dequeue(w: Waiter): ClassState {
    w.done = true
    if (w.timer) clearTimeout(w.timer)
    // The queue it is in, not the class its number resolves to now: a class added since (say 2, where 2 used to
    // fall to class 1) would take the count from the wrong queue, and #pump would spin on the other's ghost.
    const s = w.state!
    s.queuedCount--
    this.#queued--
    const now = this.#clock()
    this.#queuedGauge.set(this.#queued, now)
    s.queuedGauge.set(s.waiting, now)
    return s
  }

  #expire(w: Waiter, reason: ShedReason): void {
    if (w.done) return
    const s = this.#dequeue(w)
    this.#shed(s, reason, this.#clock() - w.enqueuedAt, w.decide)
  }

  #shed(s: ClassState, reason: ShedReason, queuedMs: number, decide: (d: Decision) => void): void {
    s.shed.set(reason, (s.shed.get(reason) ?? 0) + 1)
    const key = `${s.sp.priorityClass}\u0000${reason}`
    this.#totalShed.set(key, (this.#totalShed.get(key) ?? 0) + 1)
    const svc = this.#serviceEwmaMs
    const slots = Math.max(1, this.limit ?? s.sp.maxConcurrency)
    const retryAfterS = Math.min(60, Math.max(1, Math.ceil(((this.#queued / slots + 1) * svc) / 1000)))
    decide({ kind: 'shed', reason, queuedMs, retryAfterS })
  }

  #admitTicket(s: ClassState, now: number): Ticket {
    s.inFlight++
    s.admitted++
    this.#inFlight++
    this.#totalAdmitted.set(s.sp.priorityClass, (this.#totalAdmitted.get(s.sp.priorityClass) ?? 0) + 1)
    s.inFlightGauge.set(s.inFlight, now)
    this.#inFlightGauge.set(this.#inFlight, now)
    return new AdmissionTicket(s.sp.priorityClass, s, this)
  }

  /** Frees an admitted request's slot (through its ticket, once) and admits waiters. */
  releaseSlot(s: ClassState, serviceMs: number | null): void {
    const now = this.#clock()
    const inFlightBefore = this.#inFlight
    s.inFlight--
    this.#inFlight--
    s.inFlightGauge.set(s.inFlight, now)
    this.#inFlightGauge.set(this.#inFlight, now)
    if (serviceMs !== null && serviceMs >= 0) {
      this.#serviceEwmaMs =
        this.#serviceEwmaMs === 0 ? serviceMs : this.#serviceEwmaMs * 0.9 + serviceMs * 0.1
      if (this.#gradient2 && !this.#controlled) this.#gradient2.sample(serviceMs, inFlightBefore, now)
    }
    if (s.inFlight === 0 && s.waiting === 0 && !this.#byClass.has(s.sp.priorityClass)) this.#all.delete(s)
    this.#pump()
  }

  /** Admits waiters, most important class first, while slots are free. */
  #pump(): void {
    if (this.#queued === 0) return
    const now = this.#clock()
    while (this.#globalFree()) {
      let picked: ClassState | undefined
      for (const o of this.#order) {
        if (o.waiting > 0 && o.inFlight < o.sp.maxConcurrency) {
          picked = o
          break
        }
      }
      if (!picked) return
      const w = picked.shift()
      if (!w) {
        // only done waiters were left, so the count was off: correct it rather than loop on it
        picked.queuedCount = 0
        continue
      }
      w.done = true
      if (w.timer) clearTimeout(w.timer)
      this.#queued--
      this.#queuedGauge.set(this.#queued, now)
      picked.queuedGauge.set(picked.waiting, now)
      w.decide({ kind: 'admit', queuedMs: now - w.enqueuedAt, ticket: this.#admitTicket(picked, now) })
    }
  }

  takeSignals(): { inFlight: GaugeStat; queued: GaugeStat; byClass: ClassSignals[] } {
    const now = this.#clock()
    const byClass: ClassSignals[] = []
    for (const s of [...this.#all].sort((a, b) => a.sp.priorityClass - b.sp.priorityClass)) {
      const shed = s.shed.size > 0 ? Object.fromEntries(s.shed) : undefined
      byClass.push({
        priorityClass: s.sp.priorityClass,
        inFlight: s.inFlightGauge.take(now),
        queued: s.queuedGauge.take(now),
        admitted: s.admitted,
        ...(shed ? { shed } : {}),
      })
      s.admitted = 0
      s.shed = new Map()
    }
    return { inFlight: this.#inFlightGauge.take(now), queued: this.#queuedGauge.take(now), byClass }
  }

  totals(): AdmissionTotals {
    return { admitted: this.#totalAdmitted, shed: this.#totalShed }
  }
}

/**
 * Makes the proxy's admission controller.
 *
 * @example
 * ```ts
 * const admission = createAdmission({ classes: DEFAULT_CLASSES, gradient2: {} })
 * ```
 */
export function createAdmission(opts: AdmissionOptions): Admission {
  return new AdmissionImpl(opts)
}
