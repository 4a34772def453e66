import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { LineCounter, isMap, isSeq, parseDocument } from 'yaml'
import type { Node as YamlNode } from 'yaml'
import { Value } from '@sinclair/typebox/value'
import type { TSchema } from '@sinclair/typebox'
import { ConfigInvalid } from '../errors.js'
import { closestNames } from '../routes/closest.js'
import {
  AgentSection,
  CollectorSection,
  CONFIG_DEFAULTS,
  ConfigFileSchema,
  ControllerSection,
  LogSection,
  PolicySection,
  StartSection,
} from './schema.js'
import type { ConfigFile, TailguardConfig } from './schema.js'

/** One problem in a config file, located. */
export interface ConfigProblem {
  readonly file: string
  readonly line: number | null
  readonly field: string
  readonly message: string
}

export const formatProblem = (p: ConfigProblem): string =>
  `${p.file}${p.line !== null ? `:${p.line}` : ''}: ${p.field || '(root)'}: ${p.message}`

/**
 * Reads and validates a YAML config file, reporting EVERY problem with its file, line and field
 * (STYLE.md section 5). Throws {@link ConfigInvalid} listing them.
 *
 * @example
 * ```ts
 * const file = readConfigFile('tailguard.yaml') // { collector: { port: 7070 }, … }
 * ```
 */
export function readConfigFile(path: string): ConfigFile {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigInvalid(
      `${path}: cannot read the config file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    )
  }
  return parseConfigText(text, path)
}

/** {@link readConfigFile} on text already read; `file` names it in messages. */
export function parseConfigText(text: string, file: string): ConfigFile {
  const lc = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: true })
  const problems: ConfigProblem[] = []
  for (const e of doc.errors) {
    problems.push({
      file,
      line: e.linePos?.[0]?.line ?? null,
      field: '',
      message: `YAML syntax: ${e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`,
    })
  }
  if (problems.length > 0) throw new ConfigInvalid(problems.map(formatProblem).join('\n'))
  let data: unknown
  try {
    data = doc.toJS({ maxAliasCount: 100 }) ?? {}
  } catch (err) {
    const m = err instanceof Error ? err.message.split('\n')[0]! : String(err)
    throw new ConfigInvalid(
      formatProblem({ file, line: null, field: '', message: `YAML: ${m} (undefined alias or alias bomb)` }),
    )
  }
  const lineOf = (path: readonly (string | number)[]): number | null => {
    // Walk down to the deepest node that exists, so a missing field points at its parent.
    let node: unknown = doc.contents
    let line: number | null = null
    const pos = (n: unknown) => {
      const r = (n as YamlNode | null)?.range
      return r ? lc.linePos(r[0]).line : null
    }
    line = pos(node)
    for (const key of path) {
      if (isMap(node)) {
        const pair = node.items.find(
          (p) => String((p.key as { value?: unknown })?.value ?? p.key) === String(key),
        )
        if (!pair) break
        line = pos(pair.key) ?? line
        node = pair.value
      } else if (isSeq(node)) {
        node = node.items[Number(key)]
        line = pos(node) ?? line
      } else break
    }
    return line
  }
  problems.push(...schemaProblems(ConfigFileSchema, data, file, lineOf))
  if (problems.length === 0) problems.push(...controllerProblems(data as ConfigFile, file, lineOf))
  if (problems.length > 0) throw new ConfigInvalid(problems.map(formatProblem).join('\n'))
  return data as ConfigFile
}

/** Which actuator types can move each knob. */
const KNOB_ACTUATORS: Readonly<Record<string, readonly string[]>> = {
  batching: ['model-server', 'triton', 'process', 'webhook'],
  admission: ['agent', 'webhook'],
  replicas: ['kubernetes', 'process', 'webhook'],
}

/**
 * What a schema cannot say about `controllers:`: bounds in order, initial setpoints inside them, unique
 * names, and for every knob an actuator that can move it.
 */
function controllerProblems(
  cfg: ConfigFile,
  file: string,
  lineOf: (path: readonly (string | number)[]) => number | null,
): ConfigProblem[] {
  const out: ConfigProblem[] = []
  const add = (path: (string | number)[], message: string) =>
    out.push({ file, line: lineOf(path), field: path.join('.'), message })
  const names = new Map<string, number>()
  ;(cfg.controllers ?? []).forEach((t, i) => {
    const name = t.name ?? [t.service, t.model, t.version].filter((x) => x).join('/')
    const seen = names.get(name)
    if (seen !== undefined)
      add(['controllers', i], `duplicate target name '${name}' (also controllers.${seen})`)
    names.set(name, i)
    const b = t.bounds
    if (b.minReplicas > b.maxReplicas)
      add(['controllers', i, 'bounds', 'minReplicas'], `must be at most maxReplicas (${b.maxReplicas})`)
    if (t.initial.replicas < b.minReplicas || t.initial.replicas > b.maxReplicas)
      add(
        ['controllers', i, 'initial', 'replicas'],
        `must lie within bounds ${b.minReplicas}..${b.maxReplicas} (got ${t.initial.replicas})`,
      )
    if (b.maxWindowMs !== undefined && t.initial.windowMs > b.maxWindowMs)
      add(['controllers', i, 'initial', 'windowMs'], `must be at most bounds.maxWindowMs (${b.maxWindowMs})`)
    if (b.maxBatch !== undefined && t.initial.maxBatch > b.maxBatch)
      add(['controllers', i, 'initial', 'maxBatch'], `must be at most bounds.maxBatch (${b.maxBatch})`)
    for (const knob of t.knobs) {
      const can = KNOB_ACTUATORS[knob]!
      if (!t.actuators.some((a) => can.includes(a.type)))
        add(['controllers', i, 'knobs'], `knob '${knob}' needs an actuator of type ${can.join(', ')}`)
    }
  })
  return out
}

function schemaProblems(
  schema: TSchema,
  data: unknown,
  file: string,
  lineOf: (path: readonly (string | number)[]) => number | null,
  prefix: readonly string[] = [],
): ConfigProblem[] {
  const out: ConfigProblem[] = []
  const seen = new Set<string>()
  const misspelt = new Set<string>()
  for (const e of Value.Errors(schema, data)) {
    const path = [...prefix, ...e.path.split('/').filter(Boolean)]
    // A union told apart by `type` (the actuators): the problems of the member that `type` names.
    const tagged = taggedMembers(e.schema)
    if (tagged !== undefined && e.value !== null && typeof e.value === 'object' && !Array.isArray(e.value)) {
      const tag = (e.value as { type?: unknown }).type
      const member = typeof tag === 'string' ? tagged.get(tag) : undefined
      const problems =
        member !== undefined
          ? schemaProblems(member, e.value, file, lineOf, path)
          : [
              {
                file,
                line: lineOf(tag === undefined ? path : [...path, 'type']),
                field: [...path, 'type'].join('.'),
                message:
                  `expected one of ${[...tagged.keys()].map((k) => JSON.stringify(k)).join(', ')}` +
                  (tag === undefined
                    ? ' (missing)'
                    : ` (got ${JSON.stringify(tag)}${nearest(tag, [...tagged.keys()])})`),
              },
            ]
      for (const p of problems) {
        const key = `${p.field}\u0000${p.message}`
        if (!seen.has(key)) out.push(p)
        seen.add(key)
      }
      continue
    }
    const field = path.join('.')
    const key = `${field}\u0000${e.message}`
    if (seen.has(key)) continue
    seen.add(key)
    const properties = (e.schema as { properties?: Record<string, unknown> }).properties
    if (e.message === 'Unexpected property' && properties !== undefined) {
      // A misspelt key: name the one meant. When that one is required, its own "missing" and type errors
      // are the same mistake and are left out below.
      const name = path.at(-1) ?? ''
      const meant = closestNames(name, Object.keys(properties), 1)[0]
      out.push({
        file,
        line: lineOf(path),
        field,
        message: `unknown field${meant !== undefined ? `; did you mean ${JSON.stringify(meant)}?` : ` (known: ${Object.keys(properties).join(', ')})`}`,
      })
      if (meant !== undefined) misspelt.add([...path.slice(0, -1), meant].join('.'))
      continue
    }
    out.push({
      file,
      line: lineOf(path),
      field,
      message:
        (unionMessage(e.schema) ?? e.message) +
        // Never echo a secret into an error message (a too-short token would be printed in full).
        (e.value !== undefined && typeof e.value !== 'object' && !SECRET_FIELD.test(path.at(-1) ?? '')
          ? ` (got ${JSON.stringify(e.value)})`
          : ''),
    })
  }
  // A missing field is one problem, not also a type error of its absent value.
  const missing = new Set(out.filter((p) => p.message === 'Expected required property').map((p) => p.field))
  return out.filter(
    (p) =>
      (!misspelt.has(p.field) || p.message.startsWith('unknown field')) &&
      (!missing.has(p.field) || p.message === 'Expected required property'),
  )
}

/** Fields whose values are never printed back: tokens, secrets, passwords, keys (`adminToken`, `apiKey`). */
const SECRET_FIELD = /token|secret|password|passphrase|key$/i

/** "; did you mean …" for a misspelt constant, or nothing. */
function nearest(value: unknown, known: readonly string[]): string {
  const close = typeof value === 'string' ? closestNames(value, known, 1) : []
  return close.length > 0 ? `; did you mean ${JSON.stringify(close[0])}?` : ''
}

/** The members of a union of objects that each fix `type` to a constant, by that constant; else undefined. */
function taggedMembers(schema: TSchema): Map<string, TSchema> | undefined {
  const members = (schema as { anyOf?: TSchema[] }).anyOf
  if (!Array.isArray(members) || members.length < 2) return undefined
  const byTag = new Map<string, TSchema>()
  for (const m of members) {
    const tag = (m as { properties?: { type?: { const?: unknown } } }).properties?.type?.const
    if (typeof tag !== 'string') return undefined
    byTag.set(tag, m)
  }
  return byTag
}

/**
 * A readable message for a value that matched none of a union's members ("expected an integer 0-64 or
 * \"auto\""), instead of TypeBox's "Expected union value"; undefined for any other schema.
 */
function unionMessage(schema: TSchema): string | undefined {
  const members = (schema as { anyOf?: TSchema[] }).anyOf
  if (!Array.isArray(members)) return undefined
  const describe = (m: TSchema): string => {
    const s = m as {
      const?: unknown
      type?: string
      minimum?: number
      maximum?: number
      pattern?: string
      minLength?: number
    }
    if ('const' in s) return JSON.stringify(s.const)
    const range =
      s.minimum !== undefined && s.maximum !== undefined
        ? ` ${s.minimum}-${s.maximum}`
        : s.minimum !== undefined
          ? ` ≥ ${s.minimum}`
          : s.maximum !== undefined
            ? ` ≤ ${s.maximum}`
            : ''
    if (s.type === 'integer') return `an integer${range}`
    if (s.type === 'number') return `a number${range}`
    if (s.type === 'null') return 'null'
    if (s.type === 'string') {
      const length = s.minLength !== undefined ? ` of at least ${s.minLength} characters` : ''
      const pattern =
        s.pattern === undefined ? '' : s.pattern === '^\\S+$' ? ' with no spaces' : ` matching ${s.pattern}`
      return `a string${length}${pattern}`
    }
    if (s.type === 'object') return 'an object'
    if (s.type === 'array') return 'a list'
    return s.type ?? 'another value'
  }
  const all = [...new Set(members.map(describe))]
  return `expected ${all.length === 1 ? all[0] : `${all.slice(0, -1).join(', ')} or ${all.at(-1)}`}`
}

/** The config fields environment variables set (beside the token lists), for naming them in errors. */
const ENV_FIELDS: Readonly<Record<string, keyof ConfigEnv>> = {
  'collector.db': 'TAILGUARD_DB',
  'agent.token': 'TAILGUARD_AGENT_TOKEN',
  'agent.otlp.token': 'TAILGUARD_OTLP_TOKEN',
  'agent.adminToken': 'TAILGUARD_AGENT_ADMIN_TOKEN',
  'start.demoLoad': 'TAILGUARD_DEMO_LOAD',
}

/** Environment variables tailguard reads. Tokens from env are never printed back. */
export interface ConfigEnv {
  readonly TAILGUARD_API_TOKEN?: string
  readonly TAILGUARD_READ_TOKEN?: string
  readonly TAILGUARD_AGENT_TOKEN?: string
  readonly TAILGUARD_DB?: string
  readonly TAILGUARD_OTLP_TOKEN?: string
  readonly TAILGUARD_AGENT_ADMIN_TOKEN?: string
  /** `start.demoLoad` (the test suite runs many `tailguard start`s at once with a light demo). */
  readonly TAILGUARD_DEMO_LOAD?: string
}

type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K]
}

/**
 * Resolves the effective config: defaults < config file < environment < flags. Validates the result
 * (flags included, named as `--flag`) and deep-freezes it.
 *
 * @example
 * ```ts
 * const cfg = resolveConfig({ file: readConfigFile('tailguard.yaml'), env: process.env, flags: { collector: { port: 8080 } } })
 * ```
 */
export function resolveConfig(input: {
  file?: ConfigFile
  fileName?: string
  env?: ConfigEnv
  flags?: DeepPartial<TailguardConfig>
}): Readonly<TailguardConfig> {
  const f = input.file ?? {}
  const env = input.env ?? {}
  const flags = input.flags ?? {}
  const d = CONFIG_DEFAULTS
  const collector = {
    ...d.collector,
    ...f.collector,
    ...(flags.collector as object),
  } as TailguardConfig['collector']
  const envApi: TailguardConfig['collector']['apiTokens'] = []
  if (env.TAILGUARD_API_TOKEN)
    envApi.push({ token: env.TAILGUARD_API_TOKEN, scope: 'admin', name: 'env:TAILGUARD_API_TOKEN' })
  if (env.TAILGUARD_READ_TOKEN)
    envApi.push({ token: env.TAILGUARD_READ_TOKEN, scope: 'read', name: 'env:TAILGUARD_READ_TOKEN' })
  const envAgent = env.TAILGUARD_AGENT_TOKEN
    ? [{ token: env.TAILGUARD_AGENT_TOKEN, name: 'env:TAILGUARD_AGENT_TOKEN' }]
    : []
  const merged: TailguardConfig = {
    collector: {
      ...collector,
      db: (flags.collector?.db as string | undefined) ?? env.TAILGUARD_DB ?? collector.db,
      apiTokens: [...collector.apiTokens, ...envApi],
      agentTokens: [...collector.agentTokens, ...envAgent],
    },
    agent: {
      ...d.agent,
      ...f.agent,
      ...(flags.agent as object),
      token:
        (flags.agent?.token as string | undefined) ??
        env.TAILGUARD_AGENT_TOKEN ??
        f.agent?.token ??
        d.agent.token,
      otlp: {
        ...d.agent.otlp,
        ...f.agent?.otlp,
        ...(flags.agent?.otlp as object),
        token:
          (flags.agent?.otlp?.token as string | null | undefined) ??
          env.TAILGUARD_OTLP_TOKEN ??
          f.agent?.otlp?.token ??
          d.agent.otlp.token,
      },
      gpu: { ...d.agent.gpu, ...f.agent?.gpu, ...(flags.agent?.gpu as object) },
      limits: { ...d.agent.limits, ...f.agent?.limits, ...(flags.agent?.limits as object) },
      adminToken:
        (flags.agent?.adminToken as string | null | undefined) ??
        env.TAILGUARD_AGENT_ADMIN_TOKEN ??
        f.agent?.adminToken ??
        d.agent.adminToken,
      proxy: {
        ...d.agent.proxy,
        ...f.agent?.proxy,
        ...(flags.agent?.proxy as object),
        labels: {
          ...d.agent.proxy.labels,
          ...f.agent?.proxy?.labels,
          ...(flags.agent?.proxy?.labels as object),
        },
      },
      mapping: { ...d.agent.mapping, ...f.agent?.mapping, ...(flags.agent?.mapping as object) },
    } as TailguardConfig['agent'],
    start: {
      ...d.start,
      ...f.start,
      ...(env.TAILGUARD_DEMO_LOAD ? { demoLoad: Number(env.TAILGUARD_DEMO_LOAD) } : {}),
      ...(flags.start as object),
    } as TailguardConfig['start'],
    controller: {
      ...d.controller,
      ...f.controller,
      ...(flags.controller as object),
    } as TailguardConfig['controller'],
    controllers: f.controllers ?? d.controllers,
    log: { ...d.log, ...f.log, ...(flags.log as object) } as TailguardConfig['log'],
    policy: {
      tailguard: {
        ...d.policy.tailguard,
        ...f.policy?.tailguard,
        ...(flags.policy?.tailguard as object),
      },
    } as TailguardConfig['policy'],
  }
  if (!merged.agent.node) merged.agent.node = hostname()
  if (!merged.agent.id) merged.agent.id = merged.agent.node
  const file = input.fileName ?? '(flags and environment)'
  const problems = [
    ...schemaProblems(CollectorSection, merged.collector, file, () => null).map((p) => ({
      ...p,
      field: `collector.${p.field}`,
    })),
    ...schemaProblems(AgentSection, merged.agent, file, () => null).map((p) => ({
      ...p,
      field: `agent.${p.field}`,
    })),
    ...schemaProblems(StartSection, merged.start, file, () => null).map((p) => ({
      ...p,
      field: `start.${p.field}`,
    })),
    ...schemaProblems(ControllerSection, merged.controller, file, () => null).map((p) => ({
      ...p,
      field: `controller.${p.field}`,
    })),
    ...schemaProblems(LogSection, merged.log, file, () => null).map((p) => ({
      ...p,
      field: `log.${p.field}`,
    })),
    ...schemaProblems(PolicySection, merged.policy, file, () => null).map((p) => ({
      ...p,
      field: `policy.${p.field}`,
    })),
  ]
  // A token that came from the environment is named by its variable, not by its index in the merged list.
  const tokenSource = (list: 'apiTokens' | 'agentTokens', i: number) =>
    /^env:(\w+)$/.exec(merged.collector[list][i]?.name ?? '')?.[1]
  // A value set by a flag is the flag's problem, one from the environment its variable's, not the file's.
  const fromFlags = (field: string) => {
    let o: unknown = flags
    for (const k of field.split('.'))
      o = o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined
    return o !== undefined
  }
  const named = problems.map((p) => {
    const m = /^collector\.(apiTokens|agentTokens)\.(\d+)\.token$/.exec(p.field)
    const tokenVariable = m ? tokenSource(m[1] as 'apiTokens' | 'agentTokens', Number(m[2])) : undefined
    if (tokenVariable) return { ...p, file: '(environment)', field: tokenVariable }
    if (fromFlags(p.field)) return { ...p, file: '(flags)', line: null }
    const variable = ENV_FIELDS[p.field]
    if (variable !== undefined && env[variable])
      return { ...p, file: '(environment)', field: variable, line: null }
    return p
  })
  if (named.length > 0) throw new ConfigInvalid(named.map(formatProblem).join('\n'))
  return deepFreeze(merged)
}

/** Freezes an object graph (as fastify freezes its options). */
export function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o)
    for (const v of Object.values(o)) deepFreeze(v)
  }
  return o
}
