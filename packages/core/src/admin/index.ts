export { createAdmin, type AdminOptions } from './create-admin';
export { DeadLetterNotRedeliverableError } from './errors/dead-letter-not-redeliverable-error';
export { ReplicationSlotActiveError } from './errors/replication-slot-active-error';
export { ReplicationSlotNotFoundError } from './errors/replication-slot-not-found-error';

export {
  backlogFigure,
  bytesFigure,
  STATUS_COUNT_LIMIT,
  statusQueries,
  type StatusQueryName,
} from './status';
export { RESILIENCE_HEAD, RESILIENCE_STALE_SECONDS, resilienceRows } from './resilience';
export { visibleText } from '../common/text';
export type {
  Admin,
  AdminCleanupOptions,
  AdminCleanupResult,
  AdminDeadLetters,
  AdminOperations,
  AdminOutbox,
  AdminSelection,
  BulkDone,
  BulkFailure,
  BulkOptions,
  BulkResult,
  BreakerStatus,
  ConsumerActivity,
  ConsumerResilience,
  DeadLetterCount,
  DestinationStatus,
  ListOperationsOptions,
  ListOutboxOptions,
  // Renamed on export: @justonce/core's operations module already exports these names.
  OperationRecord as AdminOperationRecord,
  OperationRef as AdminOperationRef,
  OperationStatus as AdminOperationStatus,
  OutboxCleanupBatch,
  OutboxEntry,
  RedeliverOptions,
  ReplicationSlotStatus,
  ReplicationSlotWalStatus,
  RetentionBacklog,
  SelectDeadLettersOptions,
  SelectOutboxOptions,
  StoreStatus,
} from './types';
