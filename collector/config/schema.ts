import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { METRICS, PHASES } from '../report/index.js'

const Retention = Type.Union([Type.String({ pattern: '^\\d+(ms|s|m|h|d|w)$' }), Type.Null()], {
  description: 'a duration like 14d, or null to keep forever',
})
const Port = Type.Integer({ minimum: 0, maximum: 65535 })
const Scope = Type.Union([Type.Literal('read'), Type.Literal('admin')])
const Secret = Type.String({ minLength: 16, maxLength: 512, pattern: '^\\S+$' })

export const CollectorSection = Type.Object(
  {
    host: Type.String({ minLength: 1 }),
    port: Port,
    /** A SQLite file path (or `sqlite:path`, `:memory:`) or a `postgres://` URL. */
    db: Type.String({ minLength: 1 }),
    apiTokens: Type.Array(
      Type.Object(
        { token: Secret, scope: Scope, name: Type.Optional(Type.String()) },
        { additionalProperties: false },
      ),
    ),
    agentTokens: Type.Array(
      Type.Object({ token: Secret, name: Type.Optional(Type.String()) }, { additionalProperties: false }),
    ),
    reportBodyLimitBytes: Type.Integer({ minimum: 1024, maximum: 256 * 1024 * 1024 }),
    bodyLimitBytes: Type.Integer({ minimum: 1024, maximum: 64 * 1024 * 1024 }),
    compactEveryMs: Type.Integer({ minimum: 1000 }),
    metricsPublic: Type.Boolean(),
    /** A file or folder of SLO definitions (tailguard YAML or OpenSLO), reloaded on change. */
    slos: Type.Union([Type.String(), Type.Null()]),
    /** Retention per rollup level (`10s`, `1m`, `1h`, `1d`): a duration like `14d`, or null to keep forever. */
    retention: Type.Object(
      {
        '10s': Type.Optional(Retention),
        '1m': Type.Optional(Retention),
        '1h': Type.Optional(Retention),
        '1d': Type.Optional(Retention),
      },
      { additionalProperties: false },
    ),
    /** How often SLOs are evaluated. */
    sloEvaluationMs: Type.Integer({ minimum: 1000 }),
    /** Alert notification receivers (signed with HMAC-SHA256 when a secret is set). */
    webhooks: Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1 }),
          url: Type.String({ pattern: '^https?://' }),
          secret: Type.Optional(Type.String({ minLength: 16 })),
          format: Type.Optional(Type.Union([Type.Literal('alertmanager'), Type.Literal('slack')])),
          severities: Type.Optional(Type.Array(Type.Union([Type.Literal('page'), Type.Literal('ticket')]))),
          timeoutMs: Type.Optional(Type.Integer({ minimum: 100 })),
          maxAgeMs: Type.Optional(Type.Integer({ minimum: 1000 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** The collector's public URL, used in alert links; default: the address it listens on. */
    externalUrl: Type.Union([Type.String({ pattern: '^https?://' }), Type.Null()]),
  },
  { additionalProperties: false },
)

const MetricName = Type.Union(METRICS.map((m) => Type.Literal(m)))
const PhaseName = Type.Union(PHASES.map((m) => Type.Literal(m)))
const Keys = Type.Array(Type.String({ minLength: 1 }))

/** The agent's OTLP span mapping, as users write it (agent/sources/otlp/mapping.ts has the defaults). */
export const OtlpMappingSection = Type.Object(
  {
    labels: Type.Optional(
      Type.Object(
        {
          service: Type.Optional(Keys),
          model: Type.Optional(Keys),
          version: Type.Optional(Keys),
          replica: Type.Optional(Keys),
          node: Type.Optional(Keys),
        },
        { additionalProperties: false },
      ),
    ),
    defaultService: Type.Optional(Type.String({ minLength: 1 })),
    phaseAttribute: Type.Optional(Type.String({ minLength: 1 })),
    statusAttribute: Type.Optional(Type.String({ minLength: 1 })),
    recordedAttribute: Type.Optional(Type.String({ minLength: 1 })),
    spanNamePhases: Type.Optional(Type.Record(Type.String(), MetricName)),
    ignoredSpanNames: Type.Optional(Keys),
    outputTokenAttributes: Type.Optional(Keys),
    firstTokenEvents: Type.Optional(Keys),
    serverRootSpansAreRequests: Type.Optional(Type.Boolean()),
    vllm: Type.Optional(Type.Boolean()),
    triton: Type.Optional(Type.Boolean()),
    tritonPhases: Type.Optional(
      Type.Object(
        {
          computeInput: Type.Optional(PhaseName),
          computeInfer: Type.Optional(PhaseName),
          computeOutput: Type.Optional(PhaseName),
        },
        { additionalProperties: false },
      ),
    ),
    maxPendingComputeSpans: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
  },
  { additionalProperties: false },
)

export const AgentSection = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 256 }),
    node: Type.String({ maxLength: 256 }),
    collector: Type.String({ pattern: '^https?://' }),
    token: Type.String(),
    intervalMs: Type.Integer({ minimum: 100, maximum: 600_000 }),
    spoolDir: Type.Union([Type.String(), Type.Null()]),
    spoolMaxBytes: Type.Integer({ minimum: 1024 }),
    otlp: Type.Object(
      {
        host: Type.String({ minLength: 1 }),
        port: Port,
        /** Bearer token OTLP exporters must send; null accepts unauthenticated spans (bind to loopback then). */
        token: Type.Union([Type.String({ minLength: 8 }), Type.Null()]),
        bodyLimitBytes: Type.Integer({ minimum: 1024, maximum: 256 * 1024 * 1024 }),
      },
      { additionalProperties: false },
    ),
    /** GPU telemetry sources. */
    gpu: Type.Object(
      {
        nvml: Type.Boolean(),
        /** libnvidia-ml path; null uses TAILGUARD_NVML_LIBRARY or libnvidia-ml.so.1. */
        nvmlLibrary: Type.Union([Type.String(), Type.Null()]),
        /** A DCGM exporter to scrape, e.g. http://127.0.0.1:9400/metrics; null scrapes none. */
        dcgmUrl: Type.Union([Type.String({ pattern: '^https?://' }), Type.Null()]),
        periodMs: Type.Integer({ minimum: 100, maximum: 600_000 }),
        /** Where /proc is (a DaemonSet mounts the host's). */
        procRoot: Type.String(),
      },
      { additionalProperties: false },
    ),
    /** Model-server replicas on this node, so GPU processes are attributed to them. */
    replicas: Type.Array(
      Type.Object(
        {
          service: Type.String({ minLength: 1 }),
          model: Type.String(),
          version: Type.String(),
          replica: Type.String({ minLength: 1 }),
          pids: Type.Optional(Type.Array(Type.Integer({ minimum: 1 }))),
          podUid: Type.Optional(Type.String()),
          containerId: Type.Optional(Type.String()),
        },
        { additionalProperties: false },
      ),
    ),
    /** Span → phase mapping overrides (see the README's OTLP section); merged over the defaults. */
    mapping: OtlpMappingSection,
  },
  { additionalProperties: false },
)

export const StartSection = Type.Object(
  {
    dataDir: Type.String({ minLength: 1 }),
    demo: Type.Boolean(),
    /** How many times faster than real time the demo replays its trace. */
    demoSpeed: Type.Number({ exclusiveMinimum: 0, maximum: 1000 }),
    /** The trace the demo replays; null uses ../shared/traces/azure-llm-2023-conv.csv when present, else synthetic arrivals. */
    demoTrace: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
)

/** The whole `tailguard.yaml`: every section optional in the file, defaults fill the rest. */
export const ConfigFileSchema = Type.Object(
  {
    version: Type.Optional(Type.Literal(1)),
    collector: Type.Optional(Type.Partial(CollectorSection)),
    agent: Type.Optional(
      Type.Partial(
        Type.Composite([
          Type.Omit(AgentSection, ['otlp', 'gpu']),
          Type.Object({
            otlp: Type.Partial(AgentSection.properties.otlp),
            gpu: Type.Partial(AgentSection.properties.gpu),
          }),
        ]),
      ),
    ),
    start: Type.Optional(Type.Partial(StartSection)),
  },
  { additionalProperties: false },
)

export type CollectorConfig = Static<typeof CollectorSection>
export type AgentConfig = Static<typeof AgentSection>
export type StartConfig = Static<typeof StartSection>
export type ConfigFile = Static<typeof ConfigFileSchema>

export interface TailguardConfig {
  readonly collector: CollectorConfig
  readonly agent: AgentConfig
  readonly start: StartConfig
}

export const DEFAULT_COLLECTOR_PORT = 7070
export const DEFAULT_OTLP_PORT = 4318

/** Every default in one place (STYLE.md section 5). */
export const CONFIG_DEFAULTS: TailguardConfig = {
  collector: {
    host: '127.0.0.1',
    port: DEFAULT_COLLECTOR_PORT,
    db: 'tailguard.db',
    apiTokens: [],
    agentTokens: [],
    reportBodyLimitBytes: 16 * 1024 * 1024,
    bodyLimitBytes: 1024 * 1024,
    compactEveryMs: 60_000,
    metricsPublic: false,
    slos: null,
    retention: {},
    sloEvaluationMs: 15_000,
    webhooks: [],
    externalUrl: null,
  },
  agent: {
    id: '',
    node: '',
    collector: `http://127.0.0.1:${DEFAULT_COLLECTOR_PORT}`,
    token: '',
    intervalMs: 5000,
    spoolDir: null,
    spoolMaxBytes: 64 * 1024 * 1024,
    otlp: { host: '127.0.0.1', port: DEFAULT_OTLP_PORT, token: null, bodyLimitBytes: 8 * 1024 * 1024 },
    gpu: { nvml: true, nvmlLibrary: null, dcgmUrl: null, periodMs: 1000, procRoot: '/proc' },
    replicas: [],
    mapping: {},
  },
  start: { dataDir: '.tailguard', demo: true, demoSpeed: 10, demoTrace: null },
}
