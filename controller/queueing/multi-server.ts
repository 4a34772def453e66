/**
 * M/M/c with Erlang C, and the Allen–Cunneen G/G/c approximation. `offeredLoad` a = λ·S is in Erlangs
 * (the number of busy servers on average); ρ = a / c. Pure functions; an unstable system yields `Infinity`.
 */

/**
 * Erlang C: the probability that an arriving request has to wait in an M/M/c queue with `servers` servers
 * and `offeredLoad` Erlangs. Computed with the numerically stable Erlang B recursion.
 *
 * @example erlangC(2, 1) // 1/3: two servers at 50% utilization
 */
export function erlangC(servers: number, offeredLoad: number): number {
  if (!(servers >= 1) || !Number.isInteger(servers)) return NaN
  const rho = offeredLoad / servers
  if (rho >= 1) return 1
  if (offeredLoad <= 0) return 0
  // Erlang B by recursion: B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1)).
  let b = 1
  for (let k = 1; k <= servers; k++) b = (offeredLoad * b) / (k + offeredLoad * b)
  return b / (1 - rho * (1 - b))
}

/**
 * M/M/c mean wait in queue: Wq = C(c, a) · S / (c − a).
 *
 * @example mmcMeanWait(2, 1, 5) // 5/3 ms
 */
export function mmcMeanWait(servers: number, offeredLoad: number, serviceTimeMs: number): number {
  if (offeredLoad >= servers) return Infinity
  return (erlangC(servers, offeredLoad) * serviceTimeMs) / (servers - offeredLoad)
}

/**
 * M/M/c mean time in system: Wq + S.
 *
 * @example mmcMeanTimeInSystem(1, 0.5, 5) // 10 ms, as M/M/1
 */
export function mmcMeanTimeInSystem(servers: number, offeredLoad: number, serviceTimeMs: number): number {
  return mmcMeanWait(servers, offeredLoad, serviceTimeMs) + serviceTimeMs
}

/**
 * M/M/c percentile of the wait in queue. P(Wq > t) = C·e^{−(c−a)t/S}, so the p-quantile is
 * S/(c−a)·ln(C/(1−p)), and 0 when C ≤ 1 − p (at least a share p of requests never waits).
 *
 * @example mmcWaitPercentile(1, 0.7, 5, 0.99) // ≈ 70.8 ms, as M/M/1
 */
export function mmcWaitPercentile(
  servers: number,
  offeredLoad: number,
  serviceTimeMs: number,
  p: number,
): number {
  if (offeredLoad >= servers) return Infinity
  const c = erlangC(servers, offeredLoad)
  if (c <= 1 - p) return 0
  return (serviceTimeMs / (servers - offeredLoad)) * Math.log(c / (1 - p))
}

/**
 * Allen–Cunneen approximation of the G/G/c mean wait: the M/M/c wait scaled by (ca² + cs²)/2.
 *
 * @example allenCunneenMeanWait(4, 3, 5, 1, 0) // half the M/M/4 wait: deterministic service
 */
export function allenCunneenMeanWait(
  servers: number,
  offeredLoad: number,
  serviceTimeMs: number,
  arrivalCv: number,
  serviceCv: number,
): number {
  return mmcMeanWait(servers, offeredLoad, serviceTimeMs) * ((arrivalCv ** 2 + serviceCv ** 2) / 2)
}
