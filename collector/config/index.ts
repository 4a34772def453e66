export { readConfigFile, parseConfigText, resolveConfig, deepFreeze, formatProblem } from './load.js'
export type { ConfigProblem, ConfigEnv } from './load.js'
export {
  CONFIG_DEFAULTS,
  DEFAULT_COLLECTOR_PORT,
  DEFAULT_OTLP_PORT,
  DEFAULT_OTLP_GRPC_PORT,
  ConfigFileSchema,
  LOG_FORMATS,
} from './schema.js'
export type {
  TailguardConfig,
  CollectorConfig,
  AgentConfig,
  StartConfig,
  ConfigFile,
  ControllerConfig,
  ControllerTargetConfig,
  ActuatorConfig,
  LogConfig,
} from './schema.js'
