import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/** The replica a GPU process belongs to: the same labels its latency series carry (less `node`). */
export interface ReplicaRef {
  readonly service: string
  readonly model: string
  readonly version: string
  readonly replica: string
}

/**
 * A model-server replica the agent knows, and how to recognise its processes: by PID (the server's PID; its
 * child processes match too), by Kubernetes pod UID, or by container id.
 */
export interface ReplicaTarget {
  readonly ref: ReplicaRef
  readonly pids?: readonly number[]
  readonly podUid?: string
  readonly containerId?: string
}

/** What the agent could find out about one GPU process. */
export interface PidAttribution {
  readonly replica?: ReplicaRef
  readonly podUid?: string
  readonly containerId?: string
}

/** Resolves a PID; never throws. */
export type PidResolver = (pid: number) => PidAttribution | undefined

const POD_UID = /pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})/i
const CONTAINER_ID = /(?:^|[/-])([0-9a-f]{64})(?:\.scope)?$/i

/**
 * Reads the pod UID and container id out of a `/proc/<pid>/cgroup` file (cgroup v1 or v2; cgroupfs or systemd
 * drivers; containerd, CRI-O and Docker naming).
 *
 * @example
 * ```ts
 * parseCgroup('0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8dbc5577_d0e2_4706_8787_57d52c03ddf2.slice/cri-containerd-' + 'a'.repeat(64) + '.scope')
 * // { podUid: '8dbc5577-d0e2-4706-8787-57d52c03ddf2', containerId: 'aaaa…' }
 * ```
 */
export function parseCgroup(text: string): { podUid?: string; containerId?: string } {
  let podUid: string | undefined
  let containerId: string | undefined
  for (const line of text.split('\n')) {
    const path = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1).trim()
    if (path === '') continue
    podUid ??= POD_UID.exec(path)?.[1]?.replaceAll('_', '-').toLowerCase()
    containerId ??= CONTAINER_ID.exec(path)?.[1]?.toLowerCase()
  }
  return {
    ...(podUid !== undefined ? { podUid } : {}),
    ...(containerId !== undefined ? { containerId } : {}),
  }
}

/** Reads the parent PID from `/proc/<pid>/stat` (field 4, after the parenthesised command). */
export function parseParentPid(stat: string): number | undefined {
  const close = stat.lastIndexOf(')')
  if (close < 0) return undefined
  const ppid = Number(stat.slice(close + 2).split(' ')[1])
  return Number.isInteger(ppid) && ppid > 0 ? ppid : undefined
}

export interface PidResolverOptions {
  /** The replicas the agent knows, read at each resolution (the list may change). */
  readonly replicas: () => readonly ReplicaTarget[]
  /** Where procfs is mounted (default `/proc`; `/host/proc` in a DaemonSet with the host's procfs mounted). */
  readonly procRoot?: string
  /** How many ancestors of a PID are checked against explicit PIDs (default 8). */
  readonly maxAncestors?: number
  readonly readFile?: (path: string) => string
}

/**
 * Builds a resolver from GPU process PIDs to replicas: an explicit PID (or an ancestor of the process) wins,
 * then the pod UID, then the container id read from `/proc/<pid>/cgroup`. Results are cached per PID; a PID
 * that cannot be read (it exited, or procfs is not ours) resolves to undefined.
 *
 * @example
 * ```ts
 * const resolve = createPidResolver({ replicas: () => [{ ref: { service: 'chat', model: 'llama', version: '3', replica: 'r0' }, pids: [4242] }] })
 * resolve(4242)?.replica?.replica // 'r0'
 * ```
 */
export function createPidResolver(options: PidResolverOptions): PidResolver {
  const procRoot = options.procRoot ?? '/proc'
  const read = options.readFile ?? ((p: string) => readFileSync(p, 'utf8'))
  const maxAncestors = options.maxAncestors ?? 8
  const cgroupCache = new Map<number, { podUid?: string; containerId?: string; ancestors: number[] } | null>()

  const procInfo = (pid: number) => {
    let c = cgroupCache.get(pid)
    if (c !== undefined) return c
    try {
      const cg = parseCgroup(read(join(procRoot, String(pid), 'cgroup')))
      const ancestors: number[] = []
      let cur = pid
      for (let i = 0; i < maxAncestors; i++) {
        let ppid: number | undefined
        try {
          ppid = parseParentPid(read(join(procRoot, String(cur), 'stat')))
        } catch {
          break
        }
        if (ppid === undefined || ppid <= 1) break
        ancestors.push(ppid)
        cur = ppid
      }
      c = { ...cg, ancestors }
    } catch {
      c = null
    }
    if (cgroupCache.size >= 4096) cgroupCache.clear()
    cgroupCache.set(pid, c)
    return c
  }

  return (pid) => {
    const targets = options.replicas()
    for (const t of targets) if (t.pids?.includes(pid)) return { replica: t.ref }
    const info = procInfo(pid)
    if (info === null) return undefined
    for (const t of targets)
      if (t.pids !== undefined && info.ancestors.some((a) => t.pids!.includes(a))) {
        return { replica: t.ref, ...withIds(info) }
      }
    for (const t of targets)
      if (t.podUid !== undefined && info.podUid !== undefined && t.podUid.toLowerCase() === info.podUid)
        return { replica: t.ref, ...withIds(info) }
    for (const t of targets) {
      // `containerd://<id>` as Kubernetes reports it, or a bare id; at least 12 hex digits, as `docker ps` shows
      const id = t.containerId?.toLowerCase().replace(/^[a-z-]+:\/\//, '')
      if (id !== undefined && id.length >= 12 && info.containerId?.startsWith(id) === true)
        return { replica: t.ref, ...withIds(info) }
    }
    return withIds(info)
  }
}

function withIds(info: { podUid?: string; containerId?: string }): PidAttribution {
  return {
    ...(info.podUid !== undefined ? { podUid: info.podUid } : {}),
    ...(info.containerId !== undefined ? { containerId: info.containerId } : {}),
  }
}
