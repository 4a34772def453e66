import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { METRICS, PHASES } from '../report/index.js'

const Retention = Type.Union([Type.String({ pattern: '^\\d+(ms|s|m|h|d|w)$' }), Type.Null()], {
  description: 'a duration like 14d, or null to keep forever',
})
const Port = Type.Integer({ minimum: 0, maximum: 65535 })
const Scope = Type.Union([Type.Literal('read'), Type.Literal('admin')])
const Secret = Type.String({ minLength: 16, maxLength: 512, pattern: '^\\S+$' })
const TimeoutMs = Type.Integer({ minimum: 100, maximum: 3_600_000 })

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
    /**
     * Threads that parse, check and prepare large report bodies beside the collector's own (0: none; `auto`: by
     * the cores this process may use, see {@link resolveIngestWorkers}).
     */
    ingestWorkers: Type.Union([Type.Integer({ minimum: 0, maximum: 64 }), Type.Literal('auto')]),
    /** Report bodies of at least this many bytes go to an ingest worker; smaller ones are prepared in place. */
    ingestWorkerMinBytes: Type.Integer({ minimum: 0, maximum: 256 * 1024 * 1024 }),
    compactEveryMs: Type.Integer({ minimum: 1000 }),
    /** A request's headers and body must arrive within this long (slow clients get 408). */
    requestTimeoutMs: TimeoutMs,
    /** A request's headers must arrive within this long. */
    headersTimeoutMs: TimeoutMs,
    /** A socket idle (no bytes either way) for this long is closed. */
    idleTimeoutMs: TimeoutMs,
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
    /** Most series one SLO's selector may match: broader API SLOs are refused, broader file SLOs not evaluated. */
    sloMaxSeries: Type.Integer({ minimum: 1, maximum: 10_000_000 }),
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
          /** First retry delay (default 1 s); doubles per attempt up to maxBackoffMs (default 5 min). */
          minBackoffMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 86_400_000 })),
          maxBackoffMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 86_400_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** The collector's public URL, used in alert links; default: the address it listens on. */
    externalUrl: Type.Union([Type.String({ pattern: '^https?://' }), Type.Null()]),
    /**
     * GPU prices for the live cost figures (docs/signals.md), USD per GPU-hour: by node name, else by GPU model (the
     * NVML/DCGM name, e.g. "NVIDIA H100 80GB HBM3"), else `gpuHourUsd`; null leaves cost figures out.
     */
    pricing: Type.Object(
      {
        gpuHourUsd: Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null()])),
        byGpuModel: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.Number({ minimum: 0 }))),
        byNode: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.Number({ minimum: 0 }))),
      },
      { additionalProperties: false },
    ),
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

const ClassSetpointItem = Type.Object(
  {
    priorityClass: Type.Integer({ minimum: 0, maximum: 15 }),
    maxConcurrency: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    maxQueue: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    queueTimeoutMs: Type.Number({ minimum: 0, maximum: 3_600_000 }),
  },
  { additionalProperties: false },
)
const Ms = Type.Integer({ minimum: 1, maximum: 86_400_000 })

/** The agent's inline proxy: listener, upstreams, labels, admission classes, limits and timeouts. */
export const ProxySection = Type.Object(
  {
    host: Type.String({ minLength: 1 }),
    /** The proxy's port; null runs no proxy. */
    port: Type.Union([Port, Type.Null()]),
    /** Model servers behind the proxy (http:// URLs, optionally with a base path). */
    upstreams: Type.Array(Type.String({ pattern: '^https?://' }), { maxItems: 256 }),
    /** Labels of the proxied requests; an empty replica means the agent id. */
    labels: Type.Object(
      {
        service: Type.String({ minLength: 1, maxLength: 256 }),
        model: Type.String({ maxLength: 256 }),
        version: Type.String({ maxLength: 256 }),
        replica: Type.String({ maxLength: 256 }),
      },
      { additionalProperties: false },
    ),
    /** Path prefixes that set the service or model of the requests under them (first match wins). */
    routes: Type.Array(
      Type.Object(
        {
          pathPrefix: Type.String({ minLength: 1 }),
          service: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
          model: Type.Optional(Type.String({ maxLength: 256 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** Read the OpenAI-style JSON `model` field of request bodies as the model label. */
    modelFromBody: Type.Boolean(),
    /** Class of requests without an `x-tailguard-priority` header. */
    defaultClass: Type.Integer({ minimum: 0, maximum: 15 }),
    /** Admission setpoints per class until a controller sets others (PUT /v1/setpoints). */
    classes: Type.Array(ClassSetpointItem, { minItems: 1, maxItems: 16 }),
    /** `gradient2`: a local adaptive limit on all classes while no controller sets caps; `none`: caps only. */
    localLimit: Type.Union([Type.Literal('gradient2'), Type.Literal('none')]),
    shedStatus: Type.Union([Type.Literal(429), Type.Literal(503)]),
    maxHeaderBytes: Type.Integer({ minimum: 1024, maximum: 1024 * 1024 }),
    maxBodyBytes: Type.Integer({ minimum: 0, maximum: 4 * 1024 * 1024 * 1024 }),
    headersTimeoutMs: Ms,
    bodyIdleTimeoutMs: Ms,
    keepAliveTimeoutMs: Ms,
    connectionsPerUpstream: Type.Integer({ minimum: 1, maximum: 65_536 }),
    connectTimeoutMs: Ms,
    upstreamTimeoutMs: Ms,
    upstreamIdleTimeoutMs: Ms,
    drainGraceMs: Ms,
    staleAfterMs: Ms,
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
        /** Slow-client timeouts of the agent's HTTP port, as for the collector. */
        requestTimeoutMs: TimeoutMs,
        headersTimeoutMs: TimeoutMs,
        idleTimeoutMs: TimeoutMs,
      },
      { additionalProperties: false },
    ),
    /** Label-set limits of the recorder (docs/limits.md): what goes over them is folded into overflow series. */
    limits: Type.Object(
      {
        /** Most label sets (series) one agent keeps per interval. */
        maxSeries: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
        /** Most label sets of one service. */
        maxSeriesPerService: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
        /** Most overflow series (one per service/model/version/node) before coarser folding. */
        maxOverflowSeries: Type.Integer({ minimum: 1, maximum: 100_000 }),
      },
      { additionalProperties: false },
    ),
    /**
     * OTLP/gRPC port (same host, token and size limit as `otlp`). Unset: 4317, or a free port when
     * `otlp.port` is 0; 0: a free port; null: no gRPC receiver.
     */
    otlpGrpcPort: Type.Optional(Type.Union([Port, Type.Null()])),
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
    /** Admin bearer token of the agent's setpoints API (`/v1/setpoints`, `/v1/upstreams`); null refuses it. */
    adminToken: Type.Union([Secret, Type.Null()]),
    /** The inline proxy in front of model servers (docs/proxy.md); it runs when `port` is set. */
    proxy: ProxySection,
    /**
     * Model servers to scrape (docs/scrape.md): `url`, `kind` (auto, vllm, triton, tgi, sglang, dcgm) and the labels
     * their series get. `--scrape` flags add to this list.
     */
    scrape: Type.Array(
      Type.Object(
        {
          url: Type.String({ pattern: '^https?://' }),
          kind: Type.Optional(
            Type.Union([
              Type.Literal('auto'),
              Type.Literal('vllm'),
              Type.Literal('triton'),
              Type.Literal('tgi'),
              Type.Literal('sglang'),
              Type.Literal('dcgm'),
            ]),
          ),
          service: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
          model: Type.Optional(Type.String({ maxLength: 256 })),
          version: Type.Optional(Type.String({ maxLength: 256 })),
          replica: Type.Optional(Type.String({ maxLength: 256 })),
          periodMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
        },
        { additionalProperties: false },
      ),
      { maxItems: 256 },
    ),
  },
  { additionalProperties: false },
)

export const StartSection = Type.Object(
  {
    dataDir: Type.String({ minLength: 1 }),
    demo: Type.Boolean(),
    /** How many times faster than real time the demo replays its trace. */
    demoSpeed: Type.Number({ exclusiveMinimum: 0, maximum: 1000 }),
    /** The trace the demo replays; null replays the shipped controller/sim/traces/azure-llm-2023-conv.csv. */
    demoTrace: Type.Union([Type.String(), Type.Null()]),
    /** The controller on the serving demo (demo-llm): enforce moves its setpoints, observe only decides, off runs none. */
    demoController: Type.Union([Type.Literal('enforce'), Type.Literal('observe'), Type.Literal('off')]),
    /**
     * The serving demo's base load as a fraction of what its two starting replicas serve flat out, measured on
     * this machine when it starts. Flat out is far past the time-to-first-token objective (about a quarter of it
     * meets 500 ms), so 0.15 is about 60% of what two replicas carry within it, and a 3× step needs 4 replicas.
     */
    demoLoad: Type.Number({ exclusiveMinimum: 0, maximum: 2 }),
    /** Seconds of base load before the serving demo's load steps up (then again after each hold); 0: never. */
    demoStepAfterS: Type.Integer({ minimum: 0, maximum: 86_400 }),
    /** Seconds the stepped-up load lasts before it falls back to the base. */
    demoStepHoldS: Type.Integer({ minimum: 1, maximum: 86_400 }),
    /** How many times the base load the step sends. */
    demoStepMultiplier: Type.Number({ minimum: 1, maximum: 20 }),
  },
  { additionalProperties: false },
)

const Name = Type.String({ minLength: 1, maxLength: 256 })
const HttpUrl = Type.String({ pattern: '^https?://' })
const Token = Type.Optional(Type.String({ minLength: 8, maxLength: 512 }))

/** How `tailguard controller` (and the controller inside `tailguard start`) runs. */
export const ControllerSection = Type.Object(
  {
    /** Control interval. */
    intervalMs: Type.Integer({ minimum: 100, maximum: 600_000 }),
    /** Observations older than this many intervals freeze a target (MetricsStale). */
    staleAfterIntervals: Type.Integer({ minimum: 1, maximum: 100 }),
    /** The lease each leader renews; null: 1.5 intervals. */
    leaseTtlMs: Type.Union([Type.Integer({ minimum: 200 }), Type.Null()]),
    /** Intervals after a decision at which its effect is measured and stored. */
    effectAfterIntervals: Type.Integer({ minimum: 1, maximum: 100 }),
    /** The collector whose SLO engine gives error budgets and burn rates (`--collector`); null: none. */
    collector: Type.Union([HttpUrl, Type.Null()]),
  },
  { additionalProperties: false },
)

const Knob = Type.Union([Type.Literal('batching'), Type.Literal('admission'), Type.Literal('replicas')])

const AdmissionItem = Type.Object(
  {
    maxQueue: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    maxConcurrency: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
  },
  { additionalProperties: false },
)

/** One actuator of a target: what it drives and where. Tokens may also come from the environment. */
export const ActuatorConfig = Type.Union([
  Type.Object(
    {
      type: Type.Literal('agent'),
      /** The agent's HTTP port, e.g. http://10.0.0.5:4318 (contract: PUT /v1/setpoints). */
      url: HttpUrl,
      /** Admin token; default TAILGUARD_AGENT_ADMIN_TOKEN. */
      token: Token,
      queueTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3_600_000 })),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('model-server'),
      /** Every replica's batching API (PUT /v1/batching). */
      urls: Type.Array(HttpUrl, { minItems: 1 }),
      token: Token,
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('triton'),
      /** Triton's HTTP endpoint, e.g. http://triton:8000. */
      url: HttpUrl,
      model: Name,
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('kubernetes'),
      kind: Type.Union([Type.Literal('Deployment'), Type.Literal('StatefulSet')]),
      namespace: Name,
      name: Name,
      /** API server URL; default: in-cluster (KUBERNETES_SERVICE_HOST, the service-account token and CA). */
      apiServer: Type.Optional(HttpUrl),
      tokenFile: Type.Optional(Type.String({ minLength: 1 })),
      caFile: Type.Optional(Type.String({ minLength: 1 })),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('process'),
      /** The replica command; `{port}` in an argument is replaced by the replica's port, `{slot}` by its number. */
      command: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
      /** Variables set for each replica, `{port}` and `{slot}` replaced (e.g. CUDA_VISIBLE_DEVICES: '{slot}'). */
      env: Type.Optional(
        Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String(), {
          maxProperties: 64,
          additionalProperties: false,
        }),
      ),
      /** The first replica's port; replica i listens on basePort + i (so not 0, which would pick any port). */
      basePort: Type.Integer({ minimum: 1, maximum: 65535 }),
      host: Type.Optional(Type.String({ minLength: 1 })),
      /** The agent (proxy) whose upstream set holds the replicas (PUT /v1/upstreams), drained before a stop. */
      agentUrl: Type.Optional(HttpUrl),
      agentToken: Token,
      /** The replicas serve the batching API (PUT /v1/batching): this actuator also moves batching. */
      batching: Type.Optional(Type.Boolean()),
      /** The path a replica answers 200 on once it serves (default /health; Triton: /v2/health/ready). */
      healthPath: Type.Optional(Type.String({ pattern: '^/' })),
      /** How long a new replica may take to answer on healthPath before it counts as failed. */
      readyTimeoutMs: Type.Optional(Type.Integer({ minimum: 100 })),
      /** How long a draining replica may keep in-flight requests before it is stopped anyway. */
      drainGraceMs: Type.Optional(Type.Integer({ minimum: 0 })),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('webhook'),
      url: HttpUrl,
      /** HMAC-SHA256 signing secret (x-tailguard-signature, as the SLO webhooks). */
      secret: Type.Optional(Type.String({ minLength: 16 })),
      timeoutMs: Type.Optional(Type.Integer({ minimum: 100 })),
    },
    { additionalProperties: false },
  ),
])

/** One controlled target (an entry of `controllers:`). */
export const ControllerTarget = Type.Object(
  {
    /** The target's name in the API (default: service/model/version). */
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9._:/-]+$' })),
    service: Name,
    model: Type.Optional(Type.String({ maxLength: 256 })),
    version: Type.Optional(Type.String({ maxLength: 256 })),
    /** SLOs the target must honour (names known to the collector's SLO engine). */
    slos: Type.Array(Name),
    /** The latency objective the policy holds (ms) on `phase`, and the share of requests that must meet it. */
    objective: Type.Object(
      {
        thresholdMs: Type.Number({ exclusiveMinimum: 0 }),
        phase: Type.Optional(
          Type.Union([
            Type.Literal('e2e'),
            Type.Literal('ttft'),
            Type.Literal('queue'),
            Type.Literal('service'),
            Type.Literal('tpot'),
          ]),
        ),
        target: Type.Optional(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 })),
      },
      { additionalProperties: false },
    ),
    mode: Type.Optional(Type.Union([Type.Literal('observe'), Type.Literal('enforce')])),
    /** The policy: tailguard (default), or a baseline: static, hpa, keda, kpa, aimd. */
    policy: Type.Optional(Type.String({ minLength: 1 })),
    /** How long a new replica takes to serve (the tailguard policy's forecast horizon), ms. */
    coldStartMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
    /** What the controller may move. */
    knobs: Type.Array(Knob, { minItems: 1 }),
    bounds: Type.Object(
      {
        minReplicas: Type.Integer({ minimum: 1, maximum: 10_000 }),
        maxReplicas: Type.Integer({ minimum: 1, maximum: 10_000 }),
        maxWindowMs: Type.Optional(Type.Number({ minimum: 0, maximum: 60_000 })),
        maxBatch: Type.Optional(Type.Integer({ minimum: 1, maximum: 4096 })),
        /** Largest replica change in one interval (default 2 up, 1 down). */
        maxScaleUpStep: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        maxScaleDownStep: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        /** Largest window change in one interval, ms (default 10). */
        maxWindowStepMs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
        /** Scale-down only after this many consecutive intervals asking for fewer replicas (default 6). */
        scaleDownStabilizationIntervals: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
      },
      { additionalProperties: false },
    ),
    /** Setpoints the fleet starts with (before the first decision). */
    initial: Type.Object(
      {
        replicas: Type.Integer({ minimum: 1, maximum: 10_000 }),
        windowMs: Type.Number({ minimum: 0, maximum: 60_000 }),
        maxBatch: Type.Integer({ minimum: 1, maximum: 4096 }),
        admission: Type.Array(AdmissionItem, { minItems: 1, maxItems: 16 }),
      },
      { additionalProperties: false },
    ),
    actuators: Type.Array(ActuatorConfig, { minItems: 1 }),
  },
  { additionalProperties: false },
)

/**
 * Options of the controller's `tailguard` policy (every one optional; the policy's defaults fill the rest).
 * `tailguard sim` reads them too; its `--tg-*` flags override the file. Durations are in seconds.
 */
export const TailguardPolicySection = Type.Object(
  {
    headroom: Type.Optional(Type.Number({ minimum: 0, maximum: 10 })),
    coldStartS: Type.Optional(Type.Number({ minimum: 0 })),
    nPlusOne: Type.Optional(Type.Boolean()),
    scaleDownAfterS: Type.Optional(Type.Number({ minimum: 0 })),
    scaleDownStepS: Type.Optional(Type.Number({ minimum: 0 })),
    queueShare: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
    outputTailFactor: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    minReplicas: Type.Optional(Type.Integer({ minimum: 0 })),
    maxReplicas: Type.Optional(Type.Integer({ minimum: 1 })),
    features: Type.Optional(
      Type.Object(
        {
          forecast: Type.Optional(Type.Boolean()),
          batching: Type.Optional(Type.Boolean()),
          admission: Type.Optional(Type.Boolean()),
          budget: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

export const PolicySection = Type.Object(
  { tailguard: TailguardPolicySection },
  { additionalProperties: false },
)

/** The log formats: `auto` is sentences on a terminal and JSON lines otherwise. */
export const LOG_FORMATS = ['auto', 'pretty', 'json'] as const

export const LogSection = Type.Object(
  {
    /** How the process logs on stderr: `pretty` sentences, `json` lines, or `auto` (pretty on a terminal). */
    format: Type.Union(LOG_FORMATS.map((f) => Type.Literal(f))),
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
          Type.Omit(AgentSection, ['otlp', 'gpu', 'limits', 'proxy']),
          Type.Object({
            otlp: Type.Partial(AgentSection.properties.otlp),
            gpu: Type.Partial(AgentSection.properties.gpu),
            limits: Type.Partial(AgentSection.properties.limits),
            proxy: Type.Partial(
              Type.Composite([
                Type.Omit(ProxySection, ['labels']),
                Type.Object({ labels: Type.Partial(ProxySection.properties.labels) }),
              ]),
            ),
          }),
        ]),
      ),
    ),
    start: Type.Optional(Type.Partial(StartSection)),
    controller: Type.Optional(Type.Partial(ControllerSection)),
    controllers: Type.Optional(Type.Array(ControllerTarget)),
    log: Type.Optional(Type.Partial(LogSection)),
    policy: Type.Optional(Type.Partial(PolicySection)),
  },
  { additionalProperties: false },
)

export type CollectorConfig = Static<typeof CollectorSection>
export type AgentConfig = Static<typeof AgentSection>
export type StartConfig = Static<typeof StartSection>
export type LogConfig = Static<typeof LogSection>
export type PolicyConfig = Static<typeof PolicySection>
export type ConfigFile = Static<typeof ConfigFileSchema>
export type ControllerConfig = Static<typeof ControllerSection>
export type ControllerTargetConfig = Static<typeof ControllerTarget>
export type ActuatorConfig = Static<typeof ActuatorConfig>

export interface TailguardConfig {
  readonly collector: CollectorConfig
  readonly agent: AgentConfig
  readonly start: StartConfig
  readonly controller: ControllerConfig
  readonly controllers: readonly ControllerTargetConfig[]
  readonly log: LogConfig
  readonly policy: PolicyConfig
}

export const DEFAULT_COLLECTOR_PORT = 7070
export const DEFAULT_OTLP_PORT = 4318
export const DEFAULT_OTLP_GRPC_PORT = 4317

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
    // auto: none below 4 cores (no gain measured on 2), up to 4 on many (docs/scale.md, ingest workers).
    ingestWorkers: 'auto',
    ingestWorkerMinBytes: 256 * 1024,
    compactEveryMs: 60_000,
    requestTimeoutMs: 60_000,
    headersTimeoutMs: 10_000,
    idleTimeoutMs: 60_000,
    metricsPublic: false,
    slos: null,
    retention: {},
    sloEvaluationMs: 15_000,
    sloMaxSeries: 1000,
    webhooks: [],
    externalUrl: null,
    pricing: { gpuHourUsd: null, byGpuModel: {}, byNode: {} },
  },
  agent: {
    id: '',
    node: '',
    collector: `http://127.0.0.1:${DEFAULT_COLLECTOR_PORT}`,
    token: '',
    intervalMs: 5000,
    spoolDir: null,
    spoolMaxBytes: 64 * 1024 * 1024,
    otlp: {
      host: '127.0.0.1',
      port: DEFAULT_OTLP_PORT,
      token: null,
      bodyLimitBytes: 8 * 1024 * 1024,
      requestTimeoutMs: 60_000,
      headersTimeoutMs: 10_000,
      idleTimeoutMs: 60_000,
    },
    limits: { maxSeries: 4000, maxSeriesPerService: 2000, maxOverflowSeries: 256 },
    gpu: { nvml: true, nvmlLibrary: null, dcgmUrl: null, periodMs: 1000, procRoot: '/proc' },
    replicas: [],
    mapping: {},
    adminToken: null,
    proxy: {
      host: '127.0.0.1',
      port: null,
      upstreams: [],
      labels: { service: 'model-server', model: '', version: '', replica: '' },
      routes: [],
      modelFromBody: true,
      defaultClass: 1,
      classes: [
        { priorityClass: 0, maxConcurrency: 1024, maxQueue: 1024, queueTimeoutMs: 2000 },
        { priorityClass: 1, maxConcurrency: 1024, maxQueue: 1024, queueTimeoutMs: 2000 },
        { priorityClass: 2, maxConcurrency: 1024, maxQueue: 1024, queueTimeoutMs: 2000 },
      ],
      localLimit: 'gradient2',
      shedStatus: 429,
      maxHeaderBytes: 16 * 1024,
      maxBodyBytes: 16 * 1024 * 1024,
      headersTimeoutMs: 10_000,
      bodyIdleTimeoutMs: 30_000,
      keepAliveTimeoutMs: 65_000,
      connectionsPerUpstream: 256,
      connectTimeoutMs: 5_000,
      upstreamTimeoutMs: 300_000,
      upstreamIdleTimeoutMs: 300_000,
      drainGraceMs: 30_000,
      staleAfterMs: 60_000,
    },
    scrape: [],
  },
  start: {
    dataDir: '.tailguard',
    demo: true,
    demoSpeed: 10,
    demoTrace: null,
    demoController: 'enforce',
    demoLoad: 0.15,
    demoStepAfterS: 180,
    demoStepHoldS: 300,
    demoStepMultiplier: 3,
  },
  controller: {
    intervalMs: 5000,
    staleAfterIntervals: 3,
    leaseTtlMs: null,
    effectAfterIntervals: 3,
    collector: null,
  },
  controllers: [],
  log: { format: 'auto' },
  policy: { tailguard: {} },
}
