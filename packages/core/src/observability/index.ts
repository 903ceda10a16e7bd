export { silentLogger, consoleLogger, resolveLogger } from './logger';
export type { Logger, LogFields } from './logger';
export { resolveMeter, METER_NAME } from './metrics';
