export { createOperations } from './create-operations';
export { canonicalJson, requestHash } from './request-hash';
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
} from './types';
export * from './errors';
