/**
 * @justonce/core — transactional inbox, outbox and relay, idempotent operations and dead
 * letters on PostgreSQL or embedded PGlite: the application's API.
 *
 * Other audiences have entries of their own: `@justonce/core/transport` (the kit for writing a
 * transport), `@justonce/core/retry` (retry policies, circuit breakers, quotas and budgets),
 * `@justonce/core/admin` (the operator's API the CLI and the dashboard use) and
 * `@justonce/core/testing` (the test kit).
 *
 * @packageDocumentation
 */
export { JustonceError, isJustonceError, hasErrorCode } from './errors/justonce-error';
export type { JustonceErrorOptions } from './errors/justonce-error';
export { ConfigurationError } from './errors/configuration-error';
export { StoreUnavailableError } from './errors/store-unavailable-error';
export { errorChain } from './errors/error-chain';

export { createStore, createNames } from './store/store';
export type { Store, StoreOptions, StoreDialect } from './store/store';
export type { StoreTimeouts, StoreKeepAlive, ResolvedStoreTimeouts } from './store/limits';
export type { StoreLayout, StorePartitions, ResolvedStorePartitions } from './store/layout';
export type { StoreDistribution } from './store/distribution';
export { StoreTimeoutError, isStoreTimeoutError } from './store/errors';
export type { StoreTimeoutLimit } from './store/errors';
export { migrate, migrationStatus, rowsOf } from './store/migrate';
export type {
  MigrateOptions,
  MigrationResult,
  MigrationStatus,
  MigrationStatusOptions,
} from './store/migrate';
export type { KnexMigrationsTable } from './store/migration-knex-table';
export type { Migration, MigrationNames } from './store/migration';
export { validateIdentifier, quoteIdentifier } from './store/identifiers';
export { createKnexMigrationSource } from './store/knex-migration-source';
export type { KnexMigrationSourceOptions } from './store/knex-migration-source';
export type {
  KnexTransaction,
  SqlDialect,
  SqlQueryOptions,
  SqlResult,
  SqlTransaction,
  TransactionAdapter,
  TransactionState,
} from './transactions/types';
export {
  InvalidTransactionError,
  type InvalidTransactionReason,
} from './transactions/invalid-transaction-error';
export { knexTransactions } from './transactions/knex-adapter';
export { isTransactionAdapter } from './transactions/option';

export { silentLogger, consoleLogger } from './observability/logger';
export type { Logger, LogFields } from './observability/logger';
export { observeStoreStatus } from './admin/status-gauges';
export type { StoreStatusGauges, StoreStatusGaugesOptions } from './admin/status-gauges';
export { observeReplicationSlots } from './admin/replication-slot-gauges';
export type {
  ReplicationSlotGauges,
  ReplicationSlotGaugesOptions,
} from './admin/replication-slot-gauges';

export type { Envelope, DeliveryFacts, DeliveryPosition } from './transport/envelope';
export type { Publisher, OutgoingMessage, PublishResult } from './transport/publisher';
export { createMemoryPublisher } from './transport/memory-publisher';
export type {
  MemoryPublisher,
  MemoryPublisherOptions,
  PublishedMessage,
  FailureRule,
} from './transport/memory-publisher';
export { messageHeaders, MESSAGE_ID_HEADER } from './transport/message-headers';

export type { BackoffOptions } from './retry/backoff';
export type { ErrorClass, ErrorClassifier } from './retry/error-class';
export { RESILIENCE_DEFAULTS } from './resilience/options';
export type {
  ResilienceBreakerOptions,
  ResilienceBudgetOptions,
  ResilienceEvent,
  ResilienceOptions,
  ResilienceSnapshot,
  ResilienceWindow,
} from './resilience/types';
export type { ResilientInbox } from './resilience/resilient-inbox';
export type { Intake, IntakeDriving } from './resilience/intake';
export {
  RetryBudgetSpentError,
  RETRY_BUDGET_SPENT,
  isRetryBudgetSpentError,
} from './inbox/errors/retry-budget-spent-error';

export { createOutbox, bindOutbox } from './outbox/create-outbox';
export type { OutboxOptions } from './outbox/create-outbox';
export { deriveMessageId } from './outbox/message-id';
export { outboxChannel } from './outbox/channel';
export { NotATransactionError, InvalidEventError, DuplicateMessageIdError } from './outbox/errors';
export type { InvalidEventField } from './outbox/errors';
export type {
  OutboxEvent,
  EventCause,
  AddOptions,
  AddMessageOptions,
  MessageEventOptions,
  Outbox,
  HandlerOutbox,
} from './outbox/types';
export { defineMessage, MESSAGE_TYPE_HEADER } from './messages/message-type';
export type {
  DefineMessageOptions,
  MessageType,
  MessagePayload,
  MessageData,
} from './messages/message-type';
export type { PayloadIssue } from './messages/issues';
export { InvalidPayloadError, UnknownMessageTypeError } from './messages/errors';
export { createOperations } from './operations/create-operations';
export { canonicalJson, requestHash } from './operations/request-hash';
export type {
  OperationStatus,
  StoredOperationError,
  OperationsOptions,
  OperationTarget,
  ReserveOptions,
  RunOptions,
  OperationRef,
  OperationContext,
  OperationEffect,
  TransactionalEffect,
  TransactionalRunOptions,
  TransactionalOperationStep,
  Reservation,
  OperationRecord,
  Operations,
} from './operations/types';
export {
  OperationConflictError,
  OPERATION_CONFLICT,
  isOperationConflictError,
} from './operations/errors/operation-conflict-error';
export {
  OperationInProgressError,
  OPERATION_IN_PROGRESS,
  isOperationInProgressError,
} from './operations/errors/operation-in-progress-error';
export {
  OperationFailedError,
  OPERATION_FAILED,
  isOperationFailedError,
} from './operations/errors/operation-failed-error';
export { LeaseLostError, LEASE_LOST, isLeaseLostError } from './operations/errors/lease-lost-error';
export {
  ResponseTooLargeError,
  RESPONSE_TOO_LARGE,
  isResponseTooLargeError,
} from './operations/errors/response-too-large-error';
export {
  InvalidOperationInputError,
  INVALID_OPERATION_INPUT,
  isInvalidOperationInputError,
} from './operations/errors/invalid-operation-input-error';
export type { Once, OnceEffect, OnceOptions } from './operations/once/types';
export { onceKey, MAX_STEP_LENGTH } from './operations/once/key';
export type { OnceParent } from './operations/once/key';
export {
  OnceResultError,
  ONCE_RESULT_INVALID,
  isOnceResultError,
} from './operations/errors/once-result-error';
export {
  OnceUnavailableError,
  ONCE_UNAVAILABLE,
  isOnceUnavailableError,
} from './operations/errors/once-unavailable-error';
export { createRelay } from './relay/create-relay';
export type {
  RelayOptions,
  RelayMode,
  LogRelayOptions,
  LogRelayStats,
  RelayClaim,
  Relay,
  RelayStats,
  StopOptions,
  CycleResult,
  DeadEvent,
  CleanupOptions,
} from './relay/types';
export { createRetention } from './retention/create-retention';
export {
  RetentionTooShortError,
  RETENTION_TOO_SHORT,
  isRetentionTooShortError,
} from './retention/errors/retention-too-short-error';
export { assertRetentionCoversRedelivery } from './retention/assert-covers-redelivery';
export type {
  RetentionOptions,
  RetentionTable,
  RetentionBatch,
  TableCleanup,
  RetentionRunResult,
  Retention,
} from './retention/types';
export { createInbox } from './inbox/create-inbox';
export { on, messageHandler } from './inbox/message-handler';
export type {
  MessageRoute,
  MessageHandlerOptions,
  UnknownTypePolicy,
} from './inbox/message-handler';
export { MAX_BATCH_SIZE } from './inbox/process-batch';
export type { CountedOutcome } from './inbox/instruments';
export { FinalError } from './inbox/errors/final-error';
export { MissingMessageIdError } from './inbox/errors/missing-message-id-error';
export { InvalidMessageIdError } from './inbox/errors/invalid-message-id-error';
export { InvalidScopeError } from './inbox/errors/invalid-scope-error';
export { InvalidBodyError } from './inbox/errors/invalid-body-error';
export { InvalidHeadersError } from './inbox/errors/invalid-headers-error';
export { InvalidEnvelopeError } from './inbox/errors/invalid-envelope-error';
export { UndecodableBodyError } from './inbox/errors/undecodable-body-error';
export { PayloadConflictError } from './inbox/errors/payload-conflict-error';
export { MaxAttemptsExceededError } from './inbox/errors/max-attempts-exceeded-error';
export { AlreadyDeadLetteredError } from './inbox/errors/already-dead-lettered-error';
export { ConcurrentDeliveryError } from './inbox/errors/concurrent-delivery-error';
export { EarlierRecordFailedError } from './inbox/errors/earlier-record-failed-error';
export { AbortedTransactionError } from './inbox/errors/aborted-transaction-error';
export type { InboxErrorClass, InboxErrorClassifier } from './inbox/types';
export type {
  Inbox,
  InboxOptions,
  InboxDedupMode,
  InboxProcessOptions,
  InboxOutcome,
  InboxStep,
  Handler,
  HandlerContext,
} from './inbox/types';
export { createDeadLetters } from './dead-letters/create-dead-letters';
export { DeadLetterNotFoundError } from './dead-letters/errors/dead-letter-not-found-error';
export type {
  DeadLetter,
  DeadLetters,
  DeadLetterReason,
  ListDeadLettersOptions,
} from './dead-letters/types';

export {
  STANDARD_OUTBOX_HEADERS,
  debeziumOutboxConnector,
  debeziumOutboxSchema,
  type DebeziumConnector,
  type DebeziumOutboxConnectorOptions,
  type DebeziumOutboxTable,
} from './debezium';

/*
 * Deprecated here, kept for one release: the names that moved to the entry of their audience.
 * Import them from there; the root stops exporting them in the next release.
 */
/** @deprecated The consumer skeleton: import from `@justonce/core/transport`. */
export * from './consumer';
/** @deprecated Import from `@justonce/core/transport`. */
export {
  integerOption,
  optionKeys,
  optionalFunction,
  positiveIntegerOption,
  rejectUnknownOptions,
} from './config/options';
/** @deprecated Import from `@justonce/core/transport`. */
export { resolveLogger } from './observability/logger';
/** @deprecated Import from `@justonce/core/transport`. */
export { resolveMeter, METER_NAME } from './observability/metrics';
/** @deprecated Retry policies, circuit breakers, quotas and budgets: import from `@justonce/core/retry`. */
export * from './retry';
/** @deprecated The operator's API: import from `@justonce/core/admin`. */
export * from './admin';
