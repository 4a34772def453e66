/**
 * Single-server queueing formulas: Little's law, M/M/1, M/D/1 and the Kingman (G/G/1) approximation.
 * Times are in whatever unit the caller passes (the examples use ms); rates are per the same unit.
 * Every function is pure; an unstable queue (ρ ≥ 1) yields `Infinity`, never a throw.
 */

/**
 * Little's law: the mean number in a system equals the arrival rate times the mean time in it (L = λW).
 *
 * @example littlesLaw(1000, 0.05) // 1,000 req/s × 50 ms = 50 requests in flight
 */
export function littlesLaw(arrivalRatePerSecond: number, timeInSystemSeconds: number): number {
  return arrivalRatePerSecond * timeInSystemSeconds
}

/**
 * Utilization ρ = λ·S / c of `servers` servers, each serving one request in `serviceTimeMs` on average.
 *
 * @example utilization(140, 5) // 140 req/s × 5 ms = 0.7
 */
export function utilization(arrivalRatePerSecond: number, serviceTimeMs: number, servers = 1): number {
  return (arrivalRatePerSecond * serviceTimeMs) / 1000 / servers
}

/**
 * M/M/1 mean time in system (wait + service): T = S / (1 − ρ).
 *
 * @example mm1MeanTimeInSystem(5, 0.8) // 25 ms: five times the service time
 */
export function mm1MeanTimeInSystem(serviceTimeMs: number, rho: number): number {
  return rho >= 1 ? Infinity : serviceTimeMs / (1 - rho)
}

/**
 * M/M/1 mean wait in queue (before service): Wq = ρ·S / (1 − ρ).
 *
 * @example mm1MeanWait(5, 0.5) // 5 ms
 */
export function mm1MeanWait(serviceTimeMs: number, rho: number): number {
  return rho >= 1 ? Infinity : (rho * serviceTimeMs) / (1 - rho)
}

/**
 * M/M/1 percentile of the time in system. Time in system is exponential with mean S/(1−ρ), so the
 * p-quantile is −ln(1−p)·S/(1−ρ); for p = 0.99 that is ln(100) ≈ 4.6 times the mean.
 *
 * @example mm1TimeInSystemPercentile(5, 0.7, 0.99) // ≈ 76.7 ms
 */
export function mm1TimeInSystemPercentile(serviceTimeMs: number, rho: number, p: number): number {
  if (rho >= 1) return Infinity
  return (-Math.log(1 - p) * serviceTimeMs) / (1 - rho)
}

/**
 * M/M/1 percentile of the wait in queue. P(Wq > t) = ρ·e^{−(1−ρ)t/S}, so the p-quantile is
 * S/(1−ρ)·ln(ρ/(1−p)), and 0 when at least a share p of requests never waits (ρ ≤ 1 − p).
 *
 * @example mm1WaitPercentile(5, 0.7, 0.99) // ≈ 70.8 ms
 */
export function mm1WaitPercentile(serviceTimeMs: number, rho: number, p: number): number {
  if (rho >= 1) return Infinity
  if (rho <= 1 - p) return 0
  return (serviceTimeMs / (1 - rho)) * Math.log(rho / (1 - p))
}

/**
 * M/D/1 (deterministic service) mean wait in queue, Pollaczek–Khinchine: Wq = ρ·S / (2(1 − ρ)), half of M/M/1's.
 *
 * @example md1MeanWait(5, 0.5) // 2.5 ms
 */
export function md1MeanWait(serviceTimeMs: number, rho: number): number {
  return rho >= 1 ? Infinity : (rho * serviceTimeMs) / (2 * (1 - rho))
}

/**
 * Kingman's G/G/1 approximation of the mean wait in queue: Wq ≈ ρ/(1−ρ) · (ca² + cs²)/2 · S, where ca and cs
 * are the coefficients of variation of inter-arrival and service times. Exact for M/M/1 (ca = cs = 1) and
 * M/D/1 (cs = 0).
 *
 * @example kingmanMeanWait(5, 0.5, 1, 0) // 2.5 ms, as M/D/1
 */
export function kingmanMeanWait(
  serviceTimeMs: number,
  rho: number,
  arrivalCv: number,
  serviceCv: number,
): number {
  if (rho >= 1) return Infinity
  return (rho / (1 - rho)) * ((arrivalCv ** 2 + serviceCv ** 2) / 2) * serviceTimeMs
}
