import { useState } from 'react'
import type { FormEvent } from 'react'
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import { apiSend } from '../api.js'
import { useAuth } from '../auth.js'
import { refusalText } from '../components/controller-actions.js'
import { StateMessage } from '../components/state-message.js'
import { phaseColor } from '../lib/colors.js'
import { formatMs } from '../lib/format.js'
import {
  chartRows,
  coincideNotes,
  legendNames,
  lineDashes,
  WHATIF_PATTERNS,
  WHATIF_POLICIES,
} from '../lib/whatif.js'
import type { WhatifAnswer } from '../lib/whatif.js'

const POLICY_COLORS: Readonly<Record<string, string>> = {
  static: '#2d3748',
  hpa: '#3a6ea5',
  keda: '#e8a33d',
  kpa: '#4cb5a1',
  aimd: '#d96c4f',
  tailguard: '#6c5fc7',
}
const color = (p: string) => POLICY_COLORS[p] ?? phaseColor(p)
const pct2 = (x: number) => `${(x * 100).toFixed(2)}%`

type Run =
  | { kind: 'idle' }
  | { kind: 'running' }
  | { kind: 'done'; answer: WhatifAnswer }
  | { kind: 'failed'; text: string }

/**
 * The what-if page (`#/whatif`): simulate a synthetic pattern or an uploaded trace under several policies
 * through `POST /api/v1/whatif` (admin token), then compare them in a table and in replicas and p99 charts over
 * time. Policies whose lines coincide are named ("aimd = static") and drawn dashed, never hidden.
 *
 * @example <WhatifPage />
 */
export function WhatifPage() {
  const { token } = useAuth()
  const [source, setSource] = useState<'pattern' | 'trace'>('pattern')
  const [pattern, setPattern] = useState<string>('step')
  const [rps, setRps] = useState('50')
  const [durationS, setDurationS] = useState('1800')
  const [csv, setCsv] = useState<{ name: string; text: string } | null>(null)
  const [timeScale, setTimeScale] = useState('1')
  const [policies, setPolicies] = useState<string[]>(['static', 'hpa', 'aimd', 'tailguard'])
  const [slo, setSlo] = useState('')
  const [run, setRun] = useState<Run>({ kind: 'idle' })

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    if (token === null) return
    if (source === 'trace' && csv === null) {
      setRun({ kind: 'failed', text: 'Choose a trace CSV file first.' })
      return
    }
    const workload =
      source === 'pattern'
        ? { kind: 'pattern', pattern, rps: Number(rps), durationS: Number(durationS) }
        : { kind: 'trace', csv: csv!.text, timeScale: Number(timeScale) }
    const body = {
      workload,
      policies: WHATIF_POLICIES.filter((p) => policies.includes(p)),
      ...(slo.trim() !== '' ? { sloP99Ms: Number(slo) } : {}),
    }
    setRun({ kind: 'running' })
    try {
      setRun({ kind: 'done', answer: await apiSend<WhatifAnswer>('POST', 'whatif', body, token) })
    } catch (err) {
      setRun({ kind: 'failed', text: refusalText(err, 'run a what-if') })
    }
  }

  return (
    <main className="page">
      <div className="page-head">
        <h1>What-if</h1>
        <p className="muted">
          Simulate a load under several autoscaling policies (the simulator of <code>tailguard sim</code>) and
          compare SLO attainment, tail latency and GPU cost. Needs an admin token.
        </p>
      </div>
      <section className="panel" aria-label="What-if input">
        <form className="whatif-form" onSubmit={(e) => void submit(e)}>
          <fieldset>
            <legend>Load</legend>
            <label>
              <input
                type="radio"
                name="source"
                checked={source === 'pattern'}
                onChange={() => setSource('pattern')}
              />{' '}
              Pattern
            </label>
            <label>
              <input
                type="radio"
                name="source"
                checked={source === 'trace'}
                onChange={() => setSource('trace')}
              />{' '}
              Trace file
            </label>
            {source === 'pattern' ? (
              <div className="whatif-fields">
                <label>
                  Shape{' '}
                  <select className="select" value={pattern} onChange={(e) => setPattern(e.target.value)}>
                    {WHATIF_PATTERNS.map((p) => (
                      <option key={p.value} value={p.value}>
                        {p.label}
                      </option>
                    ))}
                  </select>
                </label>
                <label>
                  Rate, req/s{' '}
                  <input
                    type="number"
                    min="0"
                    step="any"
                    value={rps}
                    onChange={(e) => setRps(e.target.value)}
                  />
                </label>
                <label>
                  Duration, s{' '}
                  <input
                    type="number"
                    min="1"
                    step="any"
                    value={durationS}
                    onChange={(e) => setDurationS(e.target.value)}
                  />
                </label>
              </div>
            ) : (
              <div className="whatif-fields">
                <label>
                  Trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens){' '}
                  <input
                    type="file"
                    accept=".csv,text/csv"
                    onChange={(e) => {
                      const file = e.target.files?.[0]
                      if (file) void file.text().then((text) => setCsv({ name: file.name, text }))
                    }}
                  />
                </label>
                <label>
                  Time scale{' '}
                  <input
                    type="number"
                    min="0"
                    step="any"
                    value={timeScale}
                    onChange={(e) => setTimeScale(e.target.value)}
                  />
                </label>
              </div>
            )}
          </fieldset>
          <fieldset>
            <legend>Policies</legend>
            {WHATIF_POLICIES.map((p) => (
              <label key={p}>
                <input
                  type="checkbox"
                  name="policy"
                  value={p}
                  checked={policies.includes(p)}
                  onChange={(e) =>
                    setPolicies((old) => (e.target.checked ? [...old, p] : old.filter((x) => x !== p)))
                  }
                />{' '}
                {p}
              </label>
            ))}
          </fieldset>
          <fieldset>
            <legend>SLO</legend>
            <label>
              p99 target, ms{' '}
              <input
                type="number"
                min="0"
                step="any"
                placeholder="100 (LLM trace: 30000)"
                value={slo}
                onChange={(e) => setSlo(e.target.value)}
              />
            </label>
          </fieldset>
          <button type="submit" disabled={run.kind === 'running' || policies.length === 0}>
            {run.kind === 'running' ? 'Simulating…' : 'Run what-if'}
          </button>
        </form>
      </section>
      {run.kind === 'running' ? <StateMessage state="loading">Simulating…</StateMessage> : null}
      {run.kind === 'failed' ? (
        <p className="row-error" role="alert">
          {run.text}
        </p>
      ) : null}
      {run.kind === 'done' ? <WhatifResults answer={run.answer} /> : null}
    </main>
  )
}

function WhatifResults({ answer }: { answer: WhatifAnswer }) {
  const notes = coincideNotes(answer)
  const policies = answer.results.map((r) => r.policy)
  const names = legendNames(answer, policies)
  return (
    <>
      <section className="panel" aria-label="Comparison" data-state="ready">
        <header className="panel-head">
          <div>
            <h2>Comparison</h2>
            <p className="panel-sub">
              {answer.workload.name}: {answer.workload.description} ·{' '}
              {answer.simulatedRequests.toLocaleString('en-US')} simulated requests in{' '}
              {(answer.elapsedMs / 1000).toFixed(1)} s
            </p>
          </div>
        </header>
        {notes.length > 0 ? (
          <p className="whatif-coincide" role="note">
            Identical results (their lines overlap, drawn dashed): {notes.join('; ')}
          </p>
        ) : null}
        <div className="table-scroll">
          <table className="table whatif-table">
            <thead>
              <tr>
                <th>Policy</th>
                <th className="num">Attainment</th>
                <th className="num">p99</th>
                <th className="num">GPU-hours</th>
                <th className="num">Replica changes</th>
                <th className="num">Shed</th>
                <th className="num">Replicas min/mean/max</th>
              </tr>
            </thead>
            <tbody>
              {answer.results.map((r) => (
                <tr key={r.policy} data-policy={r.policy}>
                  <td>{names[r.policy]}</td>
                  <td className="num" data-col="attainment" data-value={r.attainment}>
                    {pct2(r.attainment)}
                  </td>
                  <td className="num" data-col="p99" data-value={r.p99Ms}>
                    {formatMs(r.p99Ms)}
                  </td>
                  <td className="num" data-col="gpu-hours" data-value={r.gpuHours}>
                    {r.gpuHours.toFixed(2)}
                  </td>
                  <td className="num" data-col="replica-changes" data-value={r.replicaChanges}>
                    {r.replicaChanges}
                  </td>
                  <td className="num" data-col="shed" data-value={r.shedRate}>
                    {pct2(r.shedRate)}
                  </td>
                  <td className="num">
                    {r.replicas.min}/{r.replicas.mean.toFixed(1)}/{r.replicas.max}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {answer.attribution ? <p className="small muted">Data: {answer.attribution}</p> : null}
      </section>
      <div className="grid">
        <WhatifChart answer={answer} metric="replicas" title="Replicas over time" names={names} />
        <WhatifChart answer={answer} metric="p99Ms" title="p99 latency over time" names={names} />
      </div>
    </>
  )
}

function WhatifChart(props: {
  answer: WhatifAnswer
  metric: 'replicas' | 'p99Ms'
  title: string
  names: Record<string, string>
}) {
  const rows = chartRows(props.answer, props.metric)
  const dashes = lineDashes(props.answer)
  const fmt = (v: number) => (props.metric === 'p99Ms' ? formatMs(v) : String(Math.round(v * 10) / 10))
  return (
    <section className="panel" aria-label={props.title} data-state={rows.length ? 'ready' : 'empty'}>
      <header className="panel-head">
        <div>
          <h2>{props.title}</h2>
          <p className="panel-sub">per simulated minute, one line per policy</p>
        </div>
      </header>
      <div className="chart" data-chart={`whatif-${props.metric}`}>
        <ResponsiveContainer width="100%" height={240}>
          <LineChart data={rows} margin={{ top: 8, right: 16, bottom: 0, left: 8 }}>
            <CartesianGrid stroke="#e6e9ef" vertical={false} />
            <XAxis
              dataKey="minute"
              stroke="#5f6878"
              fontSize={12}
              tickFormatter={(m: number) => `${m} min`}
            />
            <YAxis stroke="#5f6878" fontSize={12} width={64} tickFormatter={fmt} />
            <Tooltip
              labelFormatter={(m) => `minute ${String(m)}`}
              formatter={(v, name) => [typeof v === 'number' ? fmt(v) : '–', name]}
            />
            <Legend />
            {props.answer.timeline.series.map((s) => (
              <Line
                key={s.policy}
                dataKey={s.policy}
                name={props.names[s.policy] ?? s.policy}
                stroke={color(s.policy)}
                strokeWidth={2}
                strokeDasharray={dashes[s.policy]}
                dot={false}
                connectNulls={false}
                isAnimationActive={false}
              />
            ))}
          </LineChart>
        </ResponsiveContainer>
      </div>
    </section>
  )
}
