export { silentLogger, consoleLogger, resolveLogger } from './logger';
export type { Logger, LogFields } from './logger';
export { resolveMeter, METER_NAME } from './metrics';
export { observeStoreStatus } from './status-gauges';
export type { StoreStatusGauges, StoreStatusGaugesOptions } from './status-gauges';
