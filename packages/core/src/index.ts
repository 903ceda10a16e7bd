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
export { createRelay } from './relay/create-relay';
export type {
  RelayOptions,
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
export { AbortedTransactionError } from './inbox/errors/aborted-transaction-error';
export type { InboxErrorClass, InboxErrorClassifier } from './inbox/types';
export type {
  Inbox,
  InboxOptions,
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

// Kept here for one release; each moved to the entry of its audience.
export {
  /** @deprecated Import from `@justonce/core/transport`. */
  consumerLifecycle,
  /** @deprecated Import from `@justonce/core/transport`. */
  ConsumerStateError,
  /** @deprecated Import from `@justonce/core/transport`. */
  decide,
  /** @deprecated Import from `@justonce/core/transport`. */
  decideOnThrow,
  /** @deprecated Import from `@justonce/core/transport`. */
  DEAD_LETTER_HEADERS,
  /** @deprecated Import from `@justonce/core/transport`. */
  DEAD_LETTER_POSITION_HEADERS,
  /** @deprecated Import from `@justonce/core/transport`. */
  deadLetterFacts,
  /** @deprecated Import from `@justonce/core/transport`. */
  deadLetterHeaders,
  /** @deprecated Import from `@justonce/core/transport`. */
  DEFAULT_MESSAGE_ID_HEADER,
  /** @deprecated Import from `@justonce/core/transport`. */
  findMessageId,
  /** @deprecated Import from `@justonce/core/transport`. */
  resolveMessageIdOptions,
} from './consumer';
export type {
  /** @deprecated Import from `@justonce/core/transport`. */
  Consumer,
  /** @deprecated Import from `@justonce/core/transport`. */
  ConsumerStopOptions,
  /** @deprecated Import from `@justonce/core/transport`. */
  DeadLetterFacts,
  /** @deprecated Import from `@justonce/core/transport`. */
  Decision,
  /** @deprecated Import from `@justonce/core/transport`. */
  DecisionContext,
  /** @deprecated Import from `@justonce/core/transport`. */
  LifecycleHooks,
  /** @deprecated Import from `@justonce/core/transport`. */
  MessageIdOptions,
  /** @deprecated Import from `@justonce/core/transport`. */
  ResolvedMessageId,
  /** @deprecated Import from `@justonce/core/transport`. */
  SettleAction,
  /** @deprecated Import from `@justonce/core/transport`. */
  SettledEvent,
} from './consumer';
export {
  /** @deprecated Import from `@justonce/core/transport`. */
  integerOption,
  /** @deprecated Import from `@justonce/core/transport`. */
  optionalFunction,
  /** @deprecated Import from `@justonce/core/transport`. */
  optionKeys,
  /** @deprecated Import from `@justonce/core/transport`. */
  positiveIntegerOption,
  /** @deprecated Import from `@justonce/core/transport`. */
  rejectUnknownOptions,
} from './config/options';
export {
  /** @deprecated Import from `@justonce/core/transport`. */
  resolveLogger,
} from './observability/logger';
export {
  /** @deprecated Import from `@justonce/core/transport`. */
  resolveMeter,
  /** @deprecated Import from `@justonce/core/transport`. */
  METER_NAME,
} from './observability/metrics';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  backoffBoundsOption,
  /** @deprecated Import from `@justonce/core/retry`. */
  fullJitterBackoff,
} from './retry/backoff';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  BackoffBounds,
} from './retry/backoff';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  systemClock,
} from './retry/clock';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  Clock,
} from './retry/clock';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  createManualClock,
} from './retry/manual-clock';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  ManualClock,
} from './retry/manual-clock';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  Dispose,
} from './retry/listeners';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  ERROR_CLASSES,
} from './retry/error-class';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  classifyError,
  /** @deprecated Import from `@justonce/core/retry`. */
  isTimeoutError,
} from './retry/classify';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  ClassifyOptions,
} from './retry/classify';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  markRetriable,
  /** @deprecated Import from `@justonce/core/retry`. */
  markThrottling,
  /** @deprecated Import from `@justonce/core/retry`. */
  markNonRetriable,
  /** @deprecated Import from `@justonce/core/retry`. */
  readRetryMark,
} from './retry/marks';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  createRetryQuota,
  /** @deprecated Import from `@justonce/core/retry`. */
  isRetryQuota,
  /** @deprecated Import from `@justonce/core/retry`. */
  RETRY_QUOTA_DEFAULTS,
} from './retry/retry-quota';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryQuota,
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryQuotaOptions,
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryCostKind,
} from './retry/retry-quota';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  createRetryBudget,
  /** @deprecated Import from `@justonce/core/retry`. */
  isRetryBudget,
  /** @deprecated Import from `@justonce/core/retry`. */
  RETRY_BUDGET_DEFAULTS,
} from './retry/retry-budget';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryBudget,
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryBudgetOptions,
} from './retry/retry-budget';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  createCircuitBreaker,
  /** @deprecated Import from `@justonce/core/retry`. */
  isCircuitBreaker,
  /** @deprecated Import from `@justonce/core/retry`. */
  CIRCUIT_BREAKER_DEFAULTS,
} from './retry/circuit-breaker';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  CircuitBreaker,
  /** @deprecated Import from `@justonce/core/retry`. */
  CircuitBreakerOptions,
  /** @deprecated Import from `@justonce/core/retry`. */
  CircuitPermit,
  /** @deprecated Import from `@justonce/core/retry`. */
  CircuitState,
  /** @deprecated Import from `@justonce/core/retry`. */
  CircuitStateChange,
  /** @deprecated Import from `@justonce/core/retry`. */
  CircuitTrip,
  /** @deprecated Import from `@justonce/core/retry`. */
  ConsecutiveFailuresTrip,
  /** @deprecated Import from `@justonce/core/retry`. */
  FailureRatioTrip,
} from './retry/circuit-breaker';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  retryPolicy,
} from './retry/retry-policy';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryPolicy,
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryPolicyOptions,
} from './retry/retry-policy';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  RETRY_POLICY_DEFAULTS,
} from './retry/retry-settings';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetrySettings,
} from './retry/retry-settings';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryDecision,
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryDecisionInput,
  /** @deprecated Import from `@justonce/core/retry`. */
  GiveUpReason,
  /** @deprecated Import from `@justonce/core/retry`. */
  DecisionGiveUpReason,
} from './retry/decide';
export type {
  /** @deprecated Import from `@justonce/core/retry`. */
  Attempt,
  /** @deprecated Import from `@justonce/core/retry`. */
  AttemptContext,
  /** @deprecated Import from `@justonce/core/retry`. */
  ExecuteOptions,
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryEvent,
  /** @deprecated Import from `@justonce/core/retry`. */
  GiveUpEvent,
} from './retry/execute';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryAttemptsExhaustedError,
  /** @deprecated Import from `@justonce/core/retry`. */
  RETRY_ATTEMPTS_EXHAUSTED,
  /** @deprecated Import from `@justonce/core/retry`. */
  isRetryAttemptsExhaustedError,
} from './retry/errors/attempts-exhausted-error';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryDeadlineExceededError,
  /** @deprecated Import from `@justonce/core/retry`. */
  RETRY_DEADLINE_EXCEEDED,
  /** @deprecated Import from `@justonce/core/retry`. */
  isRetryDeadlineExceededError,
} from './retry/errors/deadline-exceeded-error';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  AttemptTimeoutError,
  /** @deprecated Import from `@justonce/core/retry`. */
  RETRY_ATTEMPT_TIMEOUT,
  /** @deprecated Import from `@justonce/core/retry`. */
  isAttemptTimeoutError,
} from './retry/errors/attempt-timeout-error';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryQuotaExhaustedError,
  /** @deprecated Import from `@justonce/core/retry`. */
  RETRY_QUOTA_EXHAUSTED,
  /** @deprecated Import from `@justonce/core/retry`. */
  isRetryQuotaExhaustedError,
} from './retry/errors/quota-exhausted-error';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  RetryBudgetExhaustedError,
  /** @deprecated Import from `@justonce/core/retry`. */
  RETRY_BUDGET_EXHAUSTED,
  /** @deprecated Import from `@justonce/core/retry`. */
  isRetryBudgetExhaustedError,
} from './retry/errors/budget-exhausted-error';
export {
  /** @deprecated Import from `@justonce/core/retry`. */
  CircuitOpenError,
  /** @deprecated Import from `@justonce/core/retry`. */
  CIRCUIT_OPEN,
  /** @deprecated Import from `@justonce/core/retry`. */
  isCircuitOpenError,
} from './retry/errors/circuit-open-error';
export {
  /** @deprecated Import from `@justonce/core/admin`. */
  createAdmin,
  /** @deprecated Import from `@justonce/core/admin`. */
  type AdminOptions,
} from './admin/create-admin';
export {
  /** @deprecated Import from `@justonce/core/admin`. */
  DeadLetterNotRedeliverableError,
} from './admin/errors/dead-letter-not-redeliverable-error';
export {
  /** @deprecated Import from `@justonce/core/admin`. */
  statusQueries,
  /** @deprecated Import from `@justonce/core/admin`. */
  type StatusQueryName,
} from './admin/status';
export type {
  /** @deprecated Import from `@justonce/core/admin`. */
  Admin,
  /** @deprecated Import from `@justonce/core/admin`. */
  AdminCleanupOptions,
  /** @deprecated Import from `@justonce/core/admin`. */
  AdminCleanupResult,
  /** @deprecated Import from `@justonce/core/admin`. */
  AdminDeadLetters,
  /** @deprecated Import from `@justonce/core/admin`. */
  AdminOperations,
  /** @deprecated Import from `@justonce/core/admin`. */
  AdminOutbox,
  /** @deprecated Import from `@justonce/core/admin`. */
  AdminSelection,
  /** @deprecated Import from `@justonce/core/admin`. */
  BulkDone,
  /** @deprecated Import from `@justonce/core/admin`. */
  BulkFailure,
  /** @deprecated Import from `@justonce/core/admin`. */
  BulkOptions,
  /** @deprecated Import from `@justonce/core/admin`. */
  BulkResult,
  /** @deprecated Import from `@justonce/core/admin`. */
  ConsumerActivity,
  /** @deprecated Import from `@justonce/core/admin`. */
  DeadLetterCount,
  /** @deprecated Import from `@justonce/core/admin`. */
  DestinationStatus,
  /** @deprecated Import from `@justonce/core/admin`. */
  ListOperationsOptions,
  /** @deprecated Import from `@justonce/core/admin`. */
  ListOutboxOptions,
  /** @deprecated Import from `@justonce/core/admin`. */
  OperationRecord as AdminOperationRecord,
  /** @deprecated Import from `@justonce/core/admin`. */
  OperationRef as AdminOperationRef,
  /** @deprecated Import from `@justonce/core/admin`. */
  OperationStatus as AdminOperationStatus,
  /** @deprecated Import from `@justonce/core/admin`. */
  OutboxCleanupBatch,
  /** @deprecated Import from `@justonce/core/admin`. */
  OutboxEntry,
  /** @deprecated Import from `@justonce/core/admin`. */
  RedeliverOptions,
  /** @deprecated Import from `@justonce/core/admin`. */
  RetentionBacklog,
  /** @deprecated Import from `@justonce/core/admin`. */
  SelectDeadLettersOptions,
  /** @deprecated Import from `@justonce/core/admin`. */
  SelectOutboxOptions,
  /** @deprecated Import from `@justonce/core/admin`. */
  StoreStatus,
} from './admin/types';
