import type { ReactNode } from 'react'
import { GpuUsageGraph } from '../components/graphs/gpu-usage-graph.js'
import { GpuTelemetryGraph } from '../components/graphs/gpu-telemetry-graph.js'
import { useGpuTelemetry } from '../hooks/use-gpu-telemetry.js'
import { TimeRangePicker } from '../components/pickers.js'
import { useGpuTimeseries, useGpus } from '../hooks/use-gpus.js'
import { useNow } from '../hooks/use-now.js'
import { formatAgo, formatMs } from '../lib/format.js'
import {
  formatBytes,
  formatUnit,
  gpuChartRows,
  gpuEventRows,
  gpuProcessRows,
  gpuTableRows,
} from '../lib/gpu-transforms.js'
import type { GpuTableRow } from '../lib/gpu-transforms.js'
import type { GpuRoute, Route } from '../lib/route.js'
import { timeRange } from '../lib/time-range.js'
import { StateMessage } from '../components/state-message.js'

/** How often the page refreshes. */
const REFRESH_MS = 10_000
/** A GPU that has not reported for this long is shown as quiet. */
const STALE_MS = 60_000

/** The panel states every section of the page shows (also set as `data-state` for tests). */
function Panel(props: {
  label: string
  title: string
  subtitle?: string
  state: 'loading' | 'error' | 'empty' | 'ready'
  loadingText: string
  errorText: string
  emptyText: ReactNode
  children: () => ReactNode
}) {
  return (
    <section className="panel" aria-label={props.label} data-state={props.state}>
      <header className="panel-head">
        <div>
          <h2>{props.title}</h2>
          {props.subtitle ? <p className="panel-sub">{props.subtitle}</p> : null}
        </div>
      </header>
      {props.state === 'ready' ? (
        props.children()
      ) : (
        <StateMessage state={props.state}>
          {props.state === 'loading'
            ? props.loadingText
            : props.state === 'error'
              ? props.errorText
              : props.emptyText}
        </StateMessage>
      )}
    </section>
  )
}

function InventoryTable({ rows, nowMs }: { rows: readonly GpuTableRow[]; nowMs: number }) {
  return (
    <table className="table gpu-table">
      <thead>
        <tr>
          <th>node</th>
          <th>GPU</th>
          <th>name</th>
          <th>MIG</th>
          <th className="num">utilization</th>
          <th className="num">memory</th>
          <th className="num">power</th>
          <th className="num">temp.</th>
          <th className="num">clocks (SM / mem)</th>
          <th>throttle reasons</th>
          <th className="num">last seen</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => {
          const stale = nowMs - r.lastSeenMs > STALE_MS
          return (
            <tr key={r.key} data-gpu={r.key} className={stale ? 'stale-row' : undefined}>
              <td>{r.node}</td>
              <td title={r.uuid}>{r.label}</td>
              <td>{r.name}</td>
              <td className="muted">{r.mig}</td>
              <td className="num" data-field="gpuUtilPct" title={`mean ${formatUnit(r.utilMeanPct, '%')}`}>
                {formatUnit(r.utilPct, '%')}
              </td>
              <td className="num" data-field="memUsedBytes">
                {formatBytes(r.memUsedBytes)}
                {r.memTotalBytes !== null ? (
                  <span className="muted"> / {formatBytes(r.memTotalBytes)}</span>
                ) : null}
              </td>
              <td className="num" data-field="powerW">
                {formatUnit(r.powerW, 'W')}
              </td>
              <td className="num" data-field="temperatureC">
                {formatUnit(r.temperatureC, '°C')}
              </td>
              <td className="num" data-field="clocks">
                {formatUnit(r.smClockMhz, 'MHz')} / {formatUnit(r.memClockMhz, 'MHz')}
              </td>
              <td className={r.throttleReasons.length ? 'bad' : 'muted'} data-field="throttle">
                {r.throttleReasons.length ? r.throttleReasons.join(', ') : 'none'}
              </td>
              <td className="num" title={new Date(r.lastSeenMs).toISOString()}>
                <span className={`dot ${stale ? 'dot-stale' : 'dot-live'}`} aria-hidden="true" />
                {formatAgo(r.lastSeenMs, nowMs)}
              </td>
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}

/**
 * The GPU page: every GPU (and MIG instance) that reports with its current state, a utilization and memory chart
 * per GPU over the chosen range, the events of the last hour (XID, ECC, …) and the processes on the GPUs with
 * the replica each belongs to and that replica's latency. Refreshes every 10 s.
 *
 * @example <GpusPage route={{ page: 'gpus', range: '1h' }} navigate={navigate} />
 */
export function GpusPage({ route, navigate }: { route: GpuRoute; navigate: (to: Route) => void }) {
  const range = timeRange(route.range)
  const inventory = useGpus(REFRESH_MS)
  const util = useGpuTimeseries('gpuUtilPct', range.from, REFRESH_MS)
  const mem = useGpuTimeseries('memUsedBytes', range.from, REFRESH_MS)
  const telemetry = useGpuTelemetry(range.from, REFRESH_MS)
  const nowMs = useNow(5_000)
  const inv = inventory.response
  const rows = inv ? gpuTableRows(inv) : []
  const events = inv ? gpuEventRows(inv) : []
  const processes = inv ? gpuProcessRows(inv) : []
  const invState =
    inventory.status === 'loading' ? 'loading' : !inv ? 'error' : rows.length ? 'ready' : 'empty'
  const errorText = `Could not load the GPUs: ${inventory.error?.message ?? 'unknown error'}`
  const chartsStatus =
    util.status === 'error' || mem.status === 'error'
      ? 'error'
      : util.status === 'loading' || mem.status === 'loading'
        ? 'loading'
        : 'success'
  const chartsError = util.error ?? mem.error
  const fromMs = util.response ? Date.parse(util.response.from) : nowMs - range.durationMs
  const toMs = util.response ? Date.parse(util.response.to) : nowMs
  return (
    <main className="page">
      <div className="page-head">
        <h1>GPUs</h1>
        <p className="muted">
          Current state from each GPU&apos;s newest report; events of the last hour; refreshed every 10
          seconds.
        </p>
      </div>
      {inventory.status === 'error' && inv ? (
        <p className="stale" role="alert">
          Refresh failed ({inventory.error?.message}); showing the last data.
        </p>
      ) : null}
      <div className="grid">
        <Panel
          label="GPU inventory"
          title="Inventory"
          state={invState}
          loadingText="Loading GPUs…"
          errorText={errorText}
          emptyText={
            <>
              No GPU has reported. Agents send GPU telemetry when NVML (or a DCGM exporter,{' '}
              <code>--dcgm-url</code>) is available on their node.
            </>
          }
        >
          {() => <InventoryTable rows={rows} nowMs={nowMs} />}
        </Panel>
        {rows.length > 0 ? (
          <>
            <div className="toolbar">
              <TimeRangePicker value={range.key} onChange={(key) => navigate({ ...route, range: key })} />
            </div>
            <div className="grid gpu-charts">
              {rows.map((r) => (
                <GpuUsageGraph
                  key={r.key}
                  gpuKey={r.key}
                  title={`${r.node} · ${r.label}`}
                  subtitle={`${r.name} — utilization % and memory used`}
                  rows={gpuChartRows(util.response, mem.response, r.key)}
                  status={chartsStatus}
                  error={chartsError}
                  fromMs={fromMs}
                  toMs={toMs}
                />
              ))}
              {rows.map((r) => (
                <GpuTelemetryGraph
                  key={`telemetry-${r.key}`}
                  gpuKey={r.key}
                  title={`${r.node} · ${r.label} · telemetry`}
                  rows={telemetry.rows(r.key)}
                  status={telemetry.status}
                  error={telemetry.error}
                  fromMs={fromMs}
                  toMs={toMs}
                />
              ))}
            </div>
          </>
        ) : null}
        <Panel
          label="GPU events"
          title="Recent events"
          subtitle="XID errors, double-bit ECC errors, GPUs lost and recovered — last hour"
          state={invState === 'ready' ? (events.length ? 'ready' : 'empty') : invState}
          loadingText="Loading events…"
          errorText={errorText}
          emptyText={invState === 'empty' ? 'No GPU has reported.' : 'No GPU event in the last hour.'}
        >
          {() => (
            <table className="table gpu-events">
              <thead>
                <tr>
                  <th>time</th>
                  <th>node</th>
                  <th>GPU</th>
                  <th>event</th>
                  <th>message</th>
                </tr>
              </thead>
              <tbody>
                {events.map((e) => (
                  <tr key={e.key} data-kind={e.kind}>
                    <td title={new Date(e.tMs).toISOString()}>{formatAgo(e.tMs, nowMs)}</td>
                    <td>{e.node}</td>
                    <td>{e.gpu}</td>
                    <td className={e.kind === 'gpu_recovered' ? undefined : 'bad'}>{e.what}</td>
                    <td className="muted">{e.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Panel>
        <Panel
          label="GPU processes"
          title="Processes"
          subtitle="From each GPU's newest report, with the replica the agent attributed them to and its latency over 5 minutes"
          state={invState === 'ready' ? (processes.length ? 'ready' : 'empty') : invState}
          loadingText="Loading processes…"
          errorText={errorText}
          emptyText={invState === 'empty' ? 'No GPU has reported.' : 'No process is running on a GPU.'}
        >
          {() => (
            <table className="table gpu-processes">
              <thead>
                <tr>
                  <th>node</th>
                  <th>GPU</th>
                  <th className="num">PID</th>
                  <th className="num">GPU memory</th>
                  <th className="num">SM util.</th>
                  <th>replica</th>
                  <th className="num">p50</th>
                  <th className="num">p99</th>
                </tr>
              </thead>
              <tbody>
                {processes.map((p) => (
                  <tr key={p.key} data-pid={p.pid}>
                    <td>{p.node}</td>
                    <td>{p.gpu}</td>
                    <td className="num">{p.pid}</td>
                    <td className="num">{formatBytes(p.usedMemoryBytes)}</td>
                    <td className="num">{formatUnit(p.smUtilPct, '%')}</td>
                    <td data-field="replica">
                      {p.replica ?? (
                        <span className="muted">not attributed{p.container ? ` (${p.container})` : ''}</span>
                      )}
                    </td>
                    <td className="num">{p.replica ? formatMs(p.p50Ms) : ''}</td>
                    <td className="num">{p.replica ? formatMs(p.p99Ms) : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Panel>
      </div>
    </main>
  )
}
