import type { Setpoints } from '../policy.js'
import type { RequestSlots } from './slots.js'

/**
 * Queues and admission of the simulator: one FIFO of request slots per priority class (index 0 first), the
 * in-system count per class, and the admission limits of the current setpoints (queue cap, in-system cap,
 * queue timeout).
 */

/**
 * A growable FIFO ring of request slots (power-of-two capacity), with push to the front for preempted requests.
 *
 * @example const r = new Ring(); r.push(3); r.unshift(7); r.shift() // 7
 */
export class Ring {
  buf = new Int32Array(1024)
  head = 0
  length = 0
  push(v: number): void {
    if (this.length === this.buf.length) this.grow()
    this.buf[(this.head + this.length) & (this.buf.length - 1)] = v
    this.length++
  }
  unshift(v: number): void {
    if (this.length === this.buf.length) this.grow()
    this.head = (this.head - 1) & (this.buf.length - 1)
    this.buf[this.head] = v
    this.length++
  }
  peek(): number {
    return this.buf[this.head]!
  }
  shift(): number {
    const v = this.buf[this.head]!
    this.head = (this.head + 1) & (this.buf.length - 1)
    this.length--
    return v
  }
  private grow(): void {
    const b = new Int32Array(this.buf.length * 2)
    for (let i = 0; i < this.length; i++) b[i] = this.buf[(this.head + i) & (this.buf.length - 1)]!
    this.buf = b
    this.head = 0
  }
}

/** Why an arriving request was not admitted (index into SHED_REASONS of the simulator). */
export const ADMIT = -1
export const SHED_QUEUE_FULL = 0
export const SHED_CONCURRENCY = 1

/**
 * Per-class queues with strict priority, and the admission limits.
 *
 * @example const q = new ClassQueues(2, slots); q.setLimits(setpoints); if (q.admits(1) === ADMIT) q.enqueue(s, 1)
 */
export class ClassQueues {
  readonly queues: Ring[]
  /** Requests waiting, all classes. */
  queued = 0
  /** Requests in the system (queued or in service) per class. */
  readonly inSystemByClass: Int32Array
  private readonly maxQueue: Float64Array
  private readonly maxConcurrency: Float64Array
  /** Queue timeout per class, ms (Infinity: none). */
  readonly timeoutMs: Float64Array

  constructor(
    readonly classes: number,
    private readonly slots: RequestSlots,
  ) {
    this.queues = Array.from({ length: classes }, () => new Ring())
    this.inSystemByClass = new Int32Array(classes)
    this.maxQueue = new Float64Array(classes).fill(Infinity)
    this.maxConcurrency = new Float64Array(classes).fill(Infinity)
    this.timeoutMs = new Float64Array(classes).fill(Infinity)
  }

  /** Takes the admission limits of new setpoints (classes without an entry are unlimited). */
  setLimits(sp: Setpoints): void {
    for (let c = 0; c < this.classes; c++) {
      const a = sp.admission[c]
      this.maxQueue[c] = a?.maxQueue ?? Infinity
      this.maxConcurrency[c] = a?.maxConcurrency ?? Infinity
      this.timeoutMs[c] = a?.queueTimeoutMs ?? Infinity
    }
  }

  /** ADMIT, or the shed reason for a new request of class `c`. */
  admits(c: number): number {
    if (this.queues[c]!.length >= this.maxQueue[c]!) return SHED_QUEUE_FULL
    if (this.inSystemByClass[c]! >= this.maxConcurrency[c]!) return SHED_CONCURRENCY
    return ADMIT
  }

  /** Queues a newly admitted request (counted in the system). */
  enqueue(s: number, c: number): void {
    this.queues[c]!.push(s)
    this.queued++
    this.inSystemByClass[c]!++
  }

  /** Puts a preempted request back at the head of its class's queue (it stays in the system). */
  requeueFront(s: number): void {
    this.queues[this.slots.cls[s]!]!.unshift(s)
    this.queued++
  }

  /** Removes the next request in priority order, or -1. */
  dequeue(): number {
    for (let c = 0; c < this.classes; c++) {
      const q = this.queues[c]!
      if (q.length > 0) {
        this.queued--
        return q.shift()
      }
    }
    return -1
  }

  /** The next request in priority order without removing it, or -1. */
  peek(): number {
    for (let c = 0; c < this.classes; c++) {
      const q = this.queues[c]!
      if (q.length > 0) return q.peek()
    }
    return -1
  }

  /** Arrival time of the oldest queued request (Infinity when none). */
  oldestArrivalMs(): number {
    let t = Infinity
    const arrival = this.slots.arrivalMs
    for (let c = 0; c < this.classes; c++) {
      const q = this.queues[c]!
      if (q.length > 0) {
        const a = arrival[q.peek()]!
        if (a < t) t = a
      }
    }
    return t
  }

  /** A request leaves the system (completed or shed after admission). */
  leave(s: number): void {
    this.inSystemByClass[this.slots.cls[s]!]!--
  }

  /** Queue lengths per class. */
  depthByClass(): number[] {
    return this.queues.map((q) => q.length)
  }
}
