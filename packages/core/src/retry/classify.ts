import { isJustonceError } from '../errors';
import { isAttemptTimeoutError } from './errors/attempt-timeout-error';
import type { ErrorClass, ErrorClassifier } from './error-class';
import { readRetryMark } from './marks';

/** Options of {@link classifyError}. */
export interface ClassifyOptions {
  /** Runs before every built-in rule; `undefined` defers to them. */
  readonly classify?: ErrorClassifier;
  /**
   * Class of an error no rule recognises. Default `'transient'`: see docs/retry.md for why
   * unknown failures are retried (within the attempt limit) rather than dead-lettered at once.
   */
  readonly defaultClass?: ErrorClass;
}

/** Error names (or `code`s) that mean "slow down", from the SDK family of seed 003. */
const THROTTLING_NAMES: ReadonlySet<string> = new Set([
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
]);

/** Error names that mean a request timed out somewhere on the way. */
const TIMEOUT_NAMES: ReadonlySet<string> = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

/** Node and undici network error codes: no usable answer came back, trying again may work. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** Network codes that are timeouts (charged the retry quota's timeout cost). */
const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  '57014', // PostgreSQL query_canceled, raised by statement_timeout
  'ER_STATEMENT_TIMEOUT', // MariaDB's max_statement_time
  'ER_QUERY_TIMEOUT', // MySQL's max_execution_time
]);

/** PostgreSQL SQLSTATEs worth retrying: the transaction can simply be run again. */
const SQLSTATE_TRANSIENT: ReadonlySet<string> = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57014', // query_canceled (statement_timeout)
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53200', // out_of_memory
  'ER_LOCK_DEADLOCK', // MySQL and MariaDB
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_STATEMENT_TIMEOUT',
  'ER_QUERY_TIMEOUT',
]);

/** SQLSTATE classes that no retry fixes: data, integrity, syntax/access, feature, auth. */
const SQLSTATE_FINAL_CLASSES: ReadonlySet<string> = new Set(['22', '23', '42', '0A', '28']);

/** HTTP statuses, following seed 003: 429, 503 and 509 throttle; 408, 500, 502, 504 are blips. */
const STATUS_CLASS: ReadonlyMap<number, ErrorClass> = new Map<number, ErrorClass>([
  [408, 'transient'],
  [429, 'throttling'],
  [500, 'transient'],
  [502, 'transient'],
  [503, 'throttling'],
  [504, 'transient'],
  [509, 'throttling'],
]);

const MAX_CAUSE_DEPTH = 5;

/**
 * Classifies an error for retrying. First match wins:
 * 1. the caller's `classify` function;
 * 2. a mark set with {@link markRetriable} / {@link markThrottling} / {@link markNonRetriable};
 * 3. a justonce error's `retriable` flag;
 * 4. an AWS SDK v3 `$retryable` trait (`{ throttling: true }` means throttling);
 * 5. a boolean `retryable` or `retriable` property (kafkajs errors carry `retriable`);
 * 6. the error's `name` or `code`: throttling names, timeout names, Node network codes,
 *    PostgreSQL SQLSTATEs; then a MySQL error's `sqlState`;
 * 7. an HTTP status in `statusCode`, `status` or `$metadata.httpStatusCode`: see the table in
 *    docs/retry.md; other 4xx and 5xx are non-retriable;
 * 8. rules 2–7 applied to `error.cause`, up to five levels deep (Node's `fetch` reports a
 *    refused connection as a `TypeError` whose cause carries `ECONNREFUSED`);
 * 9. `defaultClass`, `'transient'` unless set.
 */
export function classifyError(error: unknown, options: ClassifyOptions = {}): ErrorClass {
  const custom = options.classify?.(error);
  if (custom !== undefined) return custom;
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && isObject(current); depth++) {
    const found = classifyOne(current);
    if (found !== undefined) return found;
    current = current.cause;
  }
  return options.defaultClass ?? 'transient';
}

/**
 * True when `error` (or one of its causes) is a timeout: an {@link AttemptTimeoutError}, a
 * `TimeoutError`/`RequestTimeout` name, a network timeout code, a PostgreSQL statement timeout
 * or an HTTP 408/504. The retry quota charges timeouts more than other failures.
 */
export function isTimeoutError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && isObject(current); depth++) {
    if (isAttemptTimeoutError(current)) return true;
    const { name, code } = nameAndCode(current);
    if (name !== undefined && TIMEOUT_NAMES.has(name)) return true;
    if (code !== undefined && (TIMEOUT_CODES.has(code) || TIMEOUT_NAMES.has(code))) return true;
    const status = httpStatus(current);
    if (status === 408 || status === 504) return true;
    current = current.cause;
  }
  return false;
}

function classifyOne(error: ObjectLike): ErrorClass | undefined {
  const mark = readRetryMark(error);
  if (mark !== undefined) return mark;

  if (isJustonceError(error)) return error.retriable ? 'transient' : 'non-retriable';

  // External names keep their owners' spelling: the AWS SDK v3 sets `$retryable`
  // (@smithy/types RetryableTrait); both boolean spellings occur in the wild.
  const trait = error.$retryable;
  if (isObject(trait)) return trait.throttling === true ? 'throttling' : 'transient';

  for (const flag of [error.retryable, error.retriable]) {
    if (typeof flag === 'boolean') return flag ? 'transient' : 'non-retriable';
  }

  const { name, code } = nameAndCode(error);
  for (const id of [code, name]) {
    if (id === undefined) continue;
    if (THROTTLING_NAMES.has(id)) return 'throttling';
    if (TIMEOUT_NAMES.has(id) || NETWORK_CODES.has(id)) return 'transient';
    const sql = classifySqlState(id);
    if (sql !== undefined) return sql;
  }
  // mysql2 names its errors (`ER_DUP_ENTRY`) and puts the SQLSTATE (`23000`) beside the name.
  if (typeof error.sqlState === 'string') {
    const sql = classifySqlState(error.sqlState);
    if (sql !== undefined) return sql;
  }
  if (name === 'AbortError') return 'non-retriable';

  const status = httpStatus(error);
  if (status !== undefined && status >= 400 && status <= 599) {
    return STATUS_CLASS.get(status) ?? 'non-retriable';
  }
  return undefined;
}

function classifySqlState(code: string): ErrorClass | undefined {
  // Before the SQLSTATE shape: the set holds MySQL's error names too.
  if (SQLSTATE_TRANSIENT.has(code)) return 'transient';
  if (!/^[0-9][0-9A-Z]{4}$/.test(code)) return undefined;
  if (code === '53300') return 'throttling'; // too_many_connections
  if (code.startsWith('08')) return 'transient';
  if (SQLSTATE_FINAL_CLASSES.has(code.slice(0, 2))) return 'non-retriable';
  return undefined;
}

type ObjectLike = Record<PropertyKey, unknown>;

function isObject(value: unknown): value is ObjectLike {
  return typeof value === 'object' && value !== null;
}

function nameAndCode(error: ObjectLike): { name?: string; code?: string } {
  const name = typeof error.name === 'string' ? error.name : undefined;
  const raw = error.code ?? error.Code;
  const code = typeof raw === 'string' ? raw : undefined;
  return { name, code };
}

function httpStatus(error: ObjectLike): number | undefined {
  const metadata = error.$metadata;
  const candidates = [
    error.statusCode,
    error.status,
    isObject(metadata) ? metadata.httpStatusCode : undefined,
  ];
  for (const candidate of candidates) {
    if (typeof candidate === 'number' && Number.isInteger(candidate)) return candidate;
  }
  return undefined;
}
