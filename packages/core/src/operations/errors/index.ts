export {
  OperationConflictError,
  OPERATION_CONFLICT,
  isOperationConflictError,
} from './operation-conflict-error';
export {
  OperationInProgressError,
  OPERATION_IN_PROGRESS,
  isOperationInProgressError,
} from './operation-in-progress-error';
export {
  OperationFailedError,
  OPERATION_FAILED,
  isOperationFailedError,
} from './operation-failed-error';
export { LeaseLostError, LEASE_LOST, isLeaseLostError } from './lease-lost-error';
export {
  ResponseTooLargeError,
  RESPONSE_TOO_LARGE,
  isResponseTooLargeError,
} from './response-too-large-error';
export {
  InvalidOperationInputError,
  INVALID_OPERATION_INPUT,
  isInvalidOperationInputError,
} from './invalid-operation-input-error';
export { OnceResultError, ONCE_RESULT_INVALID, isOnceResultError } from './once-result-error';
export {
  OnceUnavailableError,
  ONCE_UNAVAILABLE,
  isOnceUnavailableError,
} from './once-unavailable-error';
