import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link InvalidOperationInputError}. */
export const INVALID_OPERATION_INPUT = 'INVALID_OPERATION_INPUT';

/**
 * A call's own arguments cannot work: an empty or too long key, scope or operation name, or a
 * request or response that cannot be represented as JSON. Nothing was written. Not retriable.
 */
export class InvalidOperationInputError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}, cause?: unknown) {
    super(INVALID_OPERATION_INPUT, message, { retriable: false, details, cause });
  }
}

/** True when `value` is an {@link InvalidOperationInputError} from any copy of the package. */
export function isInvalidOperationInputError(value: unknown): value is InvalidOperationInputError {
  return hasErrorCode(value, INVALID_OPERATION_INPUT);
}
