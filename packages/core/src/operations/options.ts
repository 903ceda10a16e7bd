import type { Meter } from '@opentelemetry/api';
import { durationOption, optionalFunction, positiveIntegerOption } from '../config/options';
import { ConfigurationError } from '../errors';
import { resolveLogger, type Logger } from '../observability/logger';
import { resolveMeter } from '../observability/metrics';
import type { Store } from '../store/store';
import { transactionsOption } from '../transactions/option';
import type { TransactionAdapter } from '../transactions/types';
import type { OperationsOptions } from './types';
import { nameOption, rejectUnknownOperationsOptions } from './validate';

const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_POLL_INTERVAL_MS = 50;
const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
const DEFAULT_MAX_KEY_LENGTH = 255;
/** The longest `maxKeyLength` on MySQL and MariaDB (see the `idempotency` table there). */
const MYSQL_MAX_KEY_LENGTH = 340;

/** {@link OperationsOptions} validated, with every default applied. @internal */
export interface ResolvedOperationsOptions {
  readonly store: Store;
  /** `undefined` when every call must name its operation. */
  readonly defaultOperation: string | undefined;
  readonly defaultScope: string;
  readonly leaseMs: number;
  readonly defaultWaitMs: number;
  readonly pollIntervalMs: number;
  readonly defaultRetentionMs: number;
  readonly maxResponseBytes: number;
  readonly maxKeyLength: number;
  readonly isRetriable: (error: unknown) => boolean;
  readonly logger: Logger;
  readonly meter: Meter;
  /** How business transactions are opened and entered. */
  readonly transactions: TransactionAdapter<unknown>;
}

/**
 * Validates the options of `createOperations` and applies defaults; throws a
 * {@link ConfigurationError} for anything that cannot work. The checks run in a fixed order,
 * so the first bad option is the one reported. @internal
 */
export function resolveOperationsOptions(
  options: OperationsOptions<unknown>,
): ResolvedOperationsOptions {
  if (options === null || typeof options !== 'object') {
    throw new ConfigurationError('createOperations needs an options object');
  }
  rejectUnknownOperationsOptions(options);
  const store: Store = options.store;
  if (store === undefined || store === null || typeof store.knex !== 'function') {
    throw new ConfigurationError('createOperations needs a store (see createStore)');
  }
  const defaultOperation =
    options.operation === undefined ? undefined : nameOption(options.operation, 'operation');
  const defaultScope = options.scope === undefined ? 'default' : nameOption(options.scope, 'scope');
  const leaseMs = durationOption(options.leaseMs, 'leaseMs', DEFAULT_LEASE_MS, 1);
  const defaultWaitMs = durationOption(options.waitForInProgressMs, 'waitForInProgressMs', 0, 0);
  const pollIntervalMs = durationOption(
    options.pollIntervalMs,
    'pollIntervalMs',
    DEFAULT_POLL_INTERVAL_MS,
    1,
  );
  const defaultRetentionMs = durationOption(
    options.retentionMs,
    'retentionMs',
    DEFAULT_RETENTION_MS,
    1,
  );
  const maxResponseBytes = positiveIntegerOption(
    options.maxResponseBytes,
    'maxResponseBytes',
    DEFAULT_MAX_RESPONSE_BYTES,
  );
  const maxKeyLength = positiveIntegerOption(
    options.maxKeyLength,
    'maxKeyLength',
    DEFAULT_MAX_KEY_LENGTH,
  );
  // MySQL's key column is 1 020 bytes (its primary key must fit InnoDB's 3 072): the longest
  // key it surely holds is 340 UTF-16 units, 3 bytes each in UTF-8. Refused now, not per call.
  if (store.dialect === 'mysql' && maxKeyLength > MYSQL_MAX_KEY_LENGTH) {
    throw new ConfigurationError(
      `maxKeyLength is at most ${MYSQL_MAX_KEY_LENGTH} on MySQL and MariaDB`,
      { maxKeyLength },
    );
  }
  const isRetriable =
    optionalFunction<NonNullable<typeof options.isRetriable>>(options.isRetriable, 'isRetriable') ??
    defaultIsRetriable;
  return {
    store,
    defaultOperation,
    defaultScope,
    leaseMs,
    defaultWaitMs,
    pollIntervalMs,
    defaultRetentionMs,
    maxResponseBytes,
    maxKeyLength,
    isRetriable,
    logger: resolveLogger(options.logger),
    meter: resolveMeter(options.meter, ['createCounter', 'createHistogram']),
    transactions: transactionsOption(options.transactions, store.knex, 'createOperations'),
  };
}

/** Default `isRetriable`: the error's own `retriable` flag, else retriable. */
function defaultIsRetriable(error: unknown): boolean {
  if (error !== null && typeof error === 'object') {
    const flag = (error as { retriable?: unknown }).retriable;
    if (typeof flag === 'boolean') return flag;
  }
  return true;
}
