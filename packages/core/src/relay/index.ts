export { createRelay } from './create-relay';
export type {
  RelayOptions,
  Relay,
  RelayStats,
  StopOptions,
  CycleResult,
  DeadEvent,
  CleanupOptions,
} from './types';
