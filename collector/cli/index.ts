export { CliError, processIO } from './command.js'
export type { CliIO, RegisterCommand } from './command.js'
export {
  assertPortsFree,
  explainListenError,
  intArg,
  numberArg,
  listening,
  LOG_LEVELS,
  loadConfig,
  makeLogger,
  portArg,
  signalLatch,
  untilSignal,
  withCommonOptions,
} from './options.js'
export type { PortClaim } from './options.js'
export { collectorCommand, registerCollector } from './collector.js'
export { registerMigrate } from './migrate.js'
