import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createPidResolver, parseCgroup, parseParentPid } from '../../../agent/gpu/attribution.js'
import type { ReplicaTarget } from '../../../agent/gpu/attribution.js'

const CID = 'a3f1c9e2b4d6078f9e1c2b3a4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70'
const POD = '8dbc5577-d0e2-4706-8787-57d52c03ddf2'

describe('parseCgroup', () => {
  it.each([
    [
      'cgroup v2, systemd driver, containerd',
      `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${POD.replaceAll('-', '_')}.slice/cri-containerd-${CID}.scope\n`,
      { podUid: POD, containerId: CID },
    ],
    [
      'cgroup v1, cgroupfs driver',
      `12:memory:/kubepods/burstable/pod${POD}/${CID}\n11:cpu,cpuacct:/kubepods/burstable/pod${POD}/${CID}\n`,
      { podUid: POD, containerId: CID },
    ],
    [
      'CRI-O',
      `0::/kubepods.slice/kubepods-pod${POD.replaceAll('-', '_')}.slice/crio-${CID}.scope`,
      { podUid: POD, containerId: CID },
    ],
    ['plain Docker', `0::/system.slice/docker-${CID}.scope\n`, { containerId: CID }],
    ['a host process', '0::/user.slice/user-1000.slice/session-3.scope\n', {}],
  ])('%s', (_name, text, expected) => {
    expect(parseCgroup(text)).toEqual(expected)
  })

  it('reads the parent pid even when the command has spaces and parentheses', () => {
    expect(parseParentPid('4242 (python3 (worker)) S 4100 4242 4242 0 -1')).toBe(4100)
  })
})

describe('createPidResolver', () => {
  const procRoot = mkdtempSync(join(tmpdir(), 'tg-proc-'))
  const proc = (pid: number, ppid: number, cgroup: string) => {
    mkdirSync(join(procRoot, String(pid)), { recursive: true })
    writeFileSync(join(procRoot, String(pid), 'cgroup'), cgroup)
    writeFileSync(join(procRoot, String(pid), 'stat'), `${pid} (python) S ${ppid} 1 1 0`)
  }
  proc(100, 1, '0::/user.slice\n') // a server started by hand
  proc(101, 100, '0::/user.slice\n') // its GPU worker
  proc(
    200,
    1,
    `0::/kubepods.slice/kubepods-pod${POD.replaceAll('-', '_')}.slice/cri-containerd-${CID}.scope\n`,
  )
  proc(300, 1, `0::/system.slice/docker-${CID}.scope\n`)
  const ref = (replica: string) => ({ service: 'chat', model: 'llama', version: '3', replica })
  const targets: ReplicaTarget[] = [
    { ref: ref('by-pid'), pids: [100] },
    { ref: ref('by-pod'), podUid: POD },
  ]
  const resolve = createPidResolver({ replicas: () => targets, procRoot })

  it('matches explicit PIDs and their children', () => {
    expect(resolve(100)).toEqual({ replica: ref('by-pid') })
    expect(resolve(101)?.replica).toEqual(ref('by-pid'))
  })

  it('matches a pod UID read from the cgroup, and keeps the ids', () => {
    expect(resolve(200)).toEqual({ replica: ref('by-pod'), podUid: POD, containerId: CID })
  })

  it('matches a container id (with or without a runtime prefix) and leaves unknown PIDs unattributed', () => {
    const byContainer = createPidResolver({
      replicas: () => [{ ref: ref('by-container'), containerId: `docker://${CID.slice(0, 12)}` }],
      procRoot,
    })
    expect(byContainer(300)).toEqual({ replica: ref('by-container'), containerId: CID })
    expect(byContainer(100)).toEqual({})
    expect(byContainer(999)).toBeUndefined()
  })
})
