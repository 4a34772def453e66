export { readConfigFile, parseConfigText, resolveConfig, deepFreeze, formatProblem } from './load.js'
export type { ConfigProblem, ConfigEnv } from './load.js'
export { CONFIG_DEFAULTS, DEFAULT_COLLECTOR_PORT, DEFAULT_OTLP_PORT, ConfigFileSchema } from './schema.js'
export type { TailguardConfig, CollectorConfig, AgentConfig, StartConfig, ConfigFile } from './schema.js'
