import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { LineCounter, isMap, isSeq, parseDocument } from 'yaml'
import type { Node as YamlNode } from 'yaml'
import { Value } from '@sinclair/typebox/value'
import type { TSchema } from '@sinclair/typebox'
import { ConfigInvalid } from '../errors.js'
import { AgentSection, CollectorSection, CONFIG_DEFAULTS, ConfigFileSchema, StartSection } from './schema.js'
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
  const data: unknown = doc.toJS() ?? {}
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
  if (problems.length > 0) throw new ConfigInvalid(problems.map(formatProblem).join('\n'))
  return data as ConfigFile
}

function schemaProblems(
  schema: TSchema,
  data: unknown,
  file: string,
  lineOf: (path: readonly (string | number)[]) => number | null,
): ConfigProblem[] {
  const out: ConfigProblem[] = []
  const seen = new Set<string>()
  for (const e of Value.Errors(schema, data)) {
    const path = e.path.split('/').filter(Boolean)
    const field = path.join('.')
    const key = `${field}\u0000${e.message}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push({
      file,
      line: lineOf(path),
      field,
      message:
        e.message +
        (e.value !== undefined && typeof e.value !== 'object' ? ` (got ${JSON.stringify(e.value)})` : ''),
    })
  }
  return out
}

/** Environment variables tailguard reads. Tokens from env are never printed back. */
export interface ConfigEnv {
  readonly TAILGUARD_API_TOKEN?: string
  readonly TAILGUARD_READ_TOKEN?: string
  readonly TAILGUARD_AGENT_TOKEN?: string
  readonly TAILGUARD_DB?: string
  readonly TAILGUARD_OTLP_TOKEN?: string
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
      mapping: { ...d.agent.mapping, ...f.agent?.mapping, ...(flags.agent?.mapping as object) },
    } as TailguardConfig['agent'],
    start: { ...d.start, ...f.start, ...(flags.start as object) } as TailguardConfig['start'],
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
  ]
  if (problems.length > 0) throw new ConfigInvalid(problems.map(formatProblem).join('\n'))
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
