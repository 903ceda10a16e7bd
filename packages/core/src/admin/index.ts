export { createAdmin, type AdminOptions } from './create-admin';
export { DeadLetterNotRedeliverableError } from './errors/dead-letter-not-redeliverable-error';
export { statusQueries, type StatusQueryName } from './status';
export type {
  Admin,
  AdminCleanupOptions,
  AdminCleanupResult,
  AdminOperations,
  AdminOutbox,
  ConsumerActivity,
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
  RetentionBacklog,
  StoreStatus,
} from './types';
