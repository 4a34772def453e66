import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { signalLatch } from '../../../collector/index.js'

// A long-running command prints its addresses and then waits for SIGINT/SIGTERM. A signal sent in between (a
// script that stops it as soon as it is up) used to meet no handler and kill the process with the default
// action, skipping the clean stop (seen in CI: `tailguard start` exited by signal, not with 0). The latch
// catches signals from when it is armed.

const log = pino({ level: 'silent' })
const listeners = () => process.listenerCount('SIGTERM') + process.listenerCount('SIGINT')

describe('signalLatch', () => {
  it('stops at once when the signal came before the wait, and lets the signals go after', async () => {
    const before = listeners()
    const latch = signalLatch()
    expect(listeners()).toBe(before + 2)
    process.emit('SIGTERM', 'SIGTERM')
    let stopped = 0
    await latch.until(async () => {
      stopped++
    }, log)
    expect(stopped).toBe(1)
    expect(listeners()).toBe(before)
  })

  it('stops once on a signal that comes while waiting', async () => {
    const before = listeners()
    const latch = signalLatch()
    let stopped = 0
    const waiting = latch.until(async () => {
      stopped++
    }, log)
    expect(stopped).toBe(0)
    process.emit('SIGINT', 'SIGINT')
    await waiting
    expect(stopped).toBe(1)
    expect(listeners()).toBe(before)
  })

  it('close() lets the signals go when the command never gets to wait', () => {
    const before = listeners()
    signalLatch().close()
    expect(listeners()).toBe(before)
  })
})
