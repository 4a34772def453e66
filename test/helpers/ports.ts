import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

// Ports the kernel hands out on its own (listen(0), the source port of every outgoing connection) come
// from the ephemeral range; a port picked there and released can be taken by any test's client before
// the process it was meant for binds it (seen in CI: "port 36511 is already in use"). So this picks
// below the range, in a band of its own for each vitest worker, and checks the port is free.
const EPHEMERAL_LOW = ephemeralLow()
const BAND = 400
const FLOOR = 20_000

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isInteger(low) && low > FLOOR + BAND ? low : 32_768
  } catch {
    return 32_768
  }
}

const bands = Math.max(1, Math.floor((EPHEMERAL_LOW - FLOOR) / BAND))
const worker = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 0)
const bandStart = FLOOR + ((Number.isInteger(worker) ? worker : 0) % bands) * BAND
let next = Math.floor(Math.random() * BAND)

function listenOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.unref()
    srv.once('error', () => resolve(false))
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)))
  })
}

/** A TCP port that was free a moment ago on 127.0.0.1, outside the kernel's ephemeral range (for processes
 * that must be told their port before they start, or keep one port across restarts). */
export async function freePort(): Promise<number> {
  return freePorts(1)
}

/** The first of `n` consecutive ports that were all free a moment ago (for a process actuator's basePort,
 * whose replica i listens on basePort + i), from the same band as {@link freePort}. */
export async function freePorts(n: number): Promise<number> {
  for (let tries = 0; tries < BAND; tries++) {
    const first = bandStart + (next++ % (BAND - n + 1))
    let free = true
    for (let i = 0; i < n && free; i++) free = await listenOnce(first + i)
    if (free) {
      next += n - 1
      return first
    }
  }
  throw new Error(`freePorts: no ${n} consecutive free ports in ${bandStart}–${bandStart + BAND - 1}`)
}
