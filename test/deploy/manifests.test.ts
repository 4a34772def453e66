import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import type { Command } from 'commander'
import { buildProgram } from '../../bin/tailguard.js'
import { parseConfigText } from '../../collector/config/index.js'
import { packageRoot } from '../../collector/paths.js'

// The manifests cannot be applied to a cluster here; this checks what can be checked: valid YAML, every
// object valid against the Kubernetes (and KEDA) OpenAPI schemas through kubernetes-models, and every
// tailguard flag they pass exists in the CLI.
const dir = join(packageRoot(), 'deploy')
const docs = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => ({ file: f, doc: d })))

const silentIO = { out: () => {}, err: () => {}, errRaw: () => {}, isTTY: false }
const commands = new Map<string, Command>((await buildProgram(silentIO)).commands.map((c) => [c.name(), c]))

describe('deploy/ manifests', () => {
  it('parse, and name apiVersion, kind and metadata.name', () => {
    expect(docs.length).toBeGreaterThanOrEqual(6)
    for (const { file, doc } of docs) {
      expect(doc.errors, file).toEqual([])
      const o = doc.toJS() as {
        apiVersion?: string
        kind?: string
        metadata?: { name?: string }
        resources?: string[]
      }
      expect(o.apiVersion, file).toEqual(expect.any(String))
      expect(o.kind, file).toEqual(expect.any(String))
      if (o.kind !== 'Kustomization') expect(o.metadata?.name, file).toEqual(expect.any(String))
    }
  })

  it('pass only flags the CLI has', () => {
    let checked = 0
    for (const { file, doc } of docs) {
      const o = doc.toJS() as {
        spec?: {
          template?: {
            spec?: {
              containers?: Array<{ image?: string; args?: string[] }>
              initContainers?: Array<{ image?: string; args?: string[] }>
            }
          }
        }
      }
      const pod = o.spec?.template?.spec
      for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
        if (!c.image?.includes('tailguard')) continue
        const [name, ...args] = c.args ?? []
        const cmd = commands.get(name!)
        expect(cmd, `${file}: unknown command ${name}`).toBeDefined()
        const flags = new Set(cmd!.options.flatMap((opt) => [opt.long, opt.short].filter(Boolean)))
        for (const a of args.filter((x) => x.startsWith('-'))) {
          expect(flags.has(a), `${file}: tailguard ${name} has no flag ${a}`).toBe(true)
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThan(5)
  })

  it('validate against the Kubernetes and KEDA schemas', () => {
    const require = createRequire(import.meta.url)
    const modelOf = (
      apiVersion: string,
      kind: string,
    ): (new (o: unknown) => { validate(): void }) | undefined => {
      const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion]
      const path =
        group === 'keda.sh'
          ? `@kubernetes-models/keda/keda.sh/${version}/${kind}`
          : `kubernetes-models/${group ? `${group}/` : ''}${version}/${kind}`
      try {
        return (require(path) as Record<string, new (o: unknown) => { validate(): void }>)[kind]
      } catch {
        return undefined
      }
    }
    let validated = 0
    for (const { file, doc } of docs) {
      const o = doc.toJS() as { apiVersion: string; kind: string }
      if (o.kind === 'Kustomization') continue
      const Model = modelOf(o.apiVersion, o.kind)
      expect(Model, `${file}: no schema for ${o.apiVersion} ${o.kind}`).toBeDefined()
      expect(() => new Model!(o).validate(), `${file}: ${o.kind}`).not.toThrow()
      validated++
    }
    expect(validated).toBeGreaterThanOrEqual(8)
  })

  it('embed config files that tailguard accepts', () => {
    for (const { file, doc } of docs) {
      const o = doc.toJS() as { kind?: string; data?: Record<string, string> }
      if (o.kind !== 'ConfigMap') continue
      for (const [key, text] of Object.entries(o.data ?? {}))
        expect(() => parseConfigText(text, `${file}:${key}`)).not.toThrow()
    }
  })
})
