/**
 * NVML constants tailguard uses, from NVIDIA's NVML API reference (event types, clock event reasons, XIDs).
 *
 * @example
 * ```ts
 * clockEventReasonNames(0x4 | 0x40) // ['sw_power_cap', 'hw_thermal_slowdown']
 * ```
 */
export const NVML_EVENT = {
  singleBitEccError: 0x1,
  doubleBitEccError: 0x2,
  pstate: 0x4,
  xidCriticalError: 0x8,
  clock: 0x10,
  powerSourceChange: 0x80,
  migConfigChange: 0x100,
} as const

/** The events the agent waits on by default: XID critical errors and double-bit ECC errors. */
export const DEFAULT_NVML_EVENT_MASK = NVML_EVENT.xidCriticalError | NVML_EVENT.doubleBitEccError

const EVENT_KINDS: ReadonlyArray<readonly [number, string]> = [
  [NVML_EVENT.xidCriticalError, 'xid'],
  [NVML_EVENT.doubleBitEccError, 'ecc_double_bit'],
  [NVML_EVENT.singleBitEccError, 'ecc_single_bit'],
  [NVML_EVENT.pstate, 'pstate'],
  [NVML_EVENT.clock, 'clock'],
  [NVML_EVENT.powerSourceChange, 'power_source_change'],
  [NVML_EVENT.migConfigChange, 'mig_config_change'],
]

/** The event kind tailguard reports for an NVML event type bit. @example eventKind(0x8) // 'xid' */
export function eventKind(type: number): string {
  for (const [bit, kind] of EVENT_KINDS) if (type === bit) return kind
  return `nvml_event_0x${type.toString(16)}`
}

/** Clock event (throttle) reason bits, named after `nvmlClocksEventReason*`. */
export const CLOCK_EVENT_REASONS: ReadonlyArray<readonly [number, string]> = [
  [0x1, 'gpu_idle'],
  [0x2, 'applications_clocks_setting'],
  [0x4, 'sw_power_cap'],
  [0x8, 'hw_slowdown'],
  [0x10, 'sync_boost'],
  [0x20, 'sw_thermal_slowdown'],
  [0x40, 'hw_thermal_slowdown'],
  [0x80, 'hw_power_brake_slowdown'],
  [0x100, 'display_clock_setting'],
]

/** Names of the reasons set in a bitmask. @example clockEventReasonNames(0x5) // ['gpu_idle', 'sw_power_cap'] */
export function clockEventReasonNames(mask: number): string[] {
  const out: string[] = []
  for (const [bit, name] of CLOCK_EVENT_REASONS) if ((mask & bit) !== 0) out.push(name)
  return out
}

/** Short descriptions of the XIDs operators meet most (NVIDIA's XID catalogue). */
const XID_MESSAGES: ReadonlyMap<number, string> = new Map([
  [13, 'graphics engine exception'],
  [31, 'GPU memory page fault'],
  [43, 'GPU stopped processing'],
  [45, 'preemptive cleanup, due to previous errors'],
  [48, 'double-bit ECC error'],
  [63, 'ECC page retirement or row remapping recorded'],
  [64, 'ECC page retirement or row remapper recording failure'],
  [74, 'NVLink error'],
  [79, 'GPU has fallen off the bus'],
  [92, 'high single-bit ECC error rate'],
  [94, 'contained ECC error'],
  [95, 'uncontained ECC error'],
])

/** A description of an XID, when tailguard knows one. @example xidMessage(79) // 'GPU has fallen off the bus' */
export function xidMessage(xid: number): string | undefined {
  return XID_MESSAGES.get(xid)
}
