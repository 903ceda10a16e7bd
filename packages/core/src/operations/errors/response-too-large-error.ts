import { JustonceError, hasErrorCode } from '../../errors';

/** Code of {@link ResponseTooLargeError}. */
export const RESPONSE_TOO_LARGE = 'RESPONSE_TOO_LARGE';

/**
 * The response to store is larger than `maxResponseBytes` once serialized to JSON. Responses
 * live inline in the record; return a small reference (an id of the created resource)
 * instead of the whole object. Not retriable.
 */
export class ResponseTooLargeError extends JustonceError {
  /** Serialized size of the response, in bytes. */
  readonly bytes: number;
  /** The configured limit, in bytes. */
  readonly maxBytes: number;

  constructor(operation: string, key: string, bytes: number, maxBytes: number) {
    super(
      RESPONSE_TOO_LARGE,
      `response of operation "${operation}" with key "${key}" is ${bytes} bytes, more than the ${maxBytes} allowed`,
      { retriable: false, details: { operation, key, bytes, maxBytes } },
    );
    this.bytes = bytes;
    this.maxBytes = maxBytes;
  }
}

/** True when `value` is a {@link ResponseTooLargeError} from any copy of the package. */
export function isResponseTooLargeError(value: unknown): value is ResponseTooLargeError {
  return hasErrorCode(value, RESPONSE_TOO_LARGE);
}
