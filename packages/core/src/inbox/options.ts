import type { Meter } from '@opentelemetry/api';
import { ConfigurationError } from '../errors/configuration-error';
import { isMysql } from '../store/dialect';
import { choiceOption, storableNameOption } from '../config/arguments';
import { resolveLogger, type Logger } from '../observability/logger';
import { resolveMeter } from '../observability/metrics';
import { createOutbox } from '../outbox/create-outbox';
import type { Outbox } from '../outbox/types';
import {
  createOperationsRuntime,
  operationsRuntimeOf,
  type OperationsRuntime,
} from '../operations/runtime';
import { resolveOperationsOptions } from '../operations/options';
import { ledgerConflict } from '../operations/once/bind';
import { BACKOFF_DEFAULTS, backoffBoundsOption, type BackoffOptions } from '../retry/backoff';
import type { Store } from '../store/store';
import { transactionsOption } from '../transactions/option';
import type { TransactionAdapter } from '../transactions/types';
import type { Envelope } from '../transport/envelope';
import type { InboxDedupMode, InboxOptions, InboxStep } from './types';
import type { InboxErrorClassifier } from './types';
import {
  integerOption,
  optionKeys,
  optionalBoolean,
  optionalFunction,
  rejectUnknownOptions,
} from '../config/options';
import { assertRetentionCoversRedelivery } from '../retention/assert-covers-redelivery';

/** Longest consumer name, in characters. */
export const MAX_CONSUMER_LENGTH = 200;
/** Longest scope, in UTF-8 bytes. */
export const MAX_SCOPE_BYTES = 255;
/** Upper bound for `maxIdLength`, so (scope, consumer, id) always fits a btree index entry. */
export const MAX_ID_LENGTH_LIMIT = 1000;
/** Longest `maxIdLength` on MySQL: the width of its `message_id` columns (see its schema). */
export const MYSQL_MAX_ID_LENGTH = 255;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Upper bound of `activityFlushMs`: the status figures cover one hour. */
const MAX_ACTIVITY_FLUSH_MS = 60 * 60 * 1000;

/** Every key of {@link InboxOptions}. @internal */
export const INBOX_OPTION_KEYS = optionKeys<InboxOptions<unknown>>()([
  'store',
  'consumer',
  'defaultScope',
  'maxAttempts',
  'maxIdLength',
  'fingerprintHeaders',
  'outbox',
  'ledger',
  'transactions',
  'decode',
  'retentionMs',
  'redeliveryHorizonMs',
  'onStep',
  'logger',
  'meter',
  'logPayloads',
  'alwaysCountAttempts',
  'backoff',
  'classify',
  'activityFlushMs',
  'dedup',
  'idRetentionMs',
]);
/** Every key of the inbox's `backoff`. @internal */
export const INBOX_BACKOFF_KEYS = optionKeys<BackoffOptions>()(['baseMs', 'capMs', 'random']);

/** {@link InboxOptions} validated, with every default applied. @internal */
export interface ResolvedInboxOptions {
  readonly store: Store;
  readonly consumer: string;
  readonly defaultScope: string;
  readonly maxAttempts: number;
  readonly maxIdLength: number;
  readonly fingerprintHeaders: readonly string[];
  readonly outbox: Outbox<unknown>;
  /** Where `ctx.once` records, or why it cannot. */
  readonly ledger: OperationsRuntime | { readonly unavailable: string };
  readonly transactions: TransactionAdapter<unknown>;
  readonly decode: ((body: Uint8Array | string, envelope: Envelope) => unknown) | undefined;
  readonly retentionMs: number;
  readonly onStep: ((step: InboxStep, messageId: string) => void | Promise<void>) | undefined;
  readonly logger: Logger;
  readonly meter: Meter;
  readonly logPayloads: boolean;
  readonly alwaysCountAttempts: boolean;
  readonly backoff: BackoffOptions;
  readonly classify: InboxErrorClassifier | undefined;
  /** `0`: activity is not recorded. */
  readonly activityFlushMs: number;
  readonly dedup: InboxDedupMode;
  /** How long the id records of `watermark+ids` are kept (`retentionMs` in the other modes). */
  readonly idRetentionMs: number;
}

const DEDUP_MODES: readonly InboxDedupMode[] = ['ids', 'watermark', 'watermark+ids'];

/** `dedup` and `idRetentionMs`, checked against each other and `retentionMs`. */
function dedupOptions(
  options: InboxOptions<unknown>,
  retentionMs: number,
): { dedup: InboxDedupMode; idRetentionMs: number } {
  const dedup = choiceOption(options.dedup, 'dedup', DEDUP_MODES, 'ids');
  if (dedup !== 'watermark+ids') {
    if (options.idRetentionMs !== undefined) {
      throw new ConfigurationError("idRetentionMs applies to dedup 'watermark+ids' only", {
        dedup,
      });
    }
    return { dedup, idRetentionMs: retentionMs };
  }
  const idRetentionMs = integerOption(
    options.idRetentionMs,
    'idRetentionMs',
    Math.min(DAY_MS, retentionMs),
    1,
    retentionMs,
  );
  return { dedup, idRetentionMs };
}

/** Validates {@link InboxOptions}; every problem is a {@link ConfigurationError}. @internal */
export function resolveInboxOptions(options: InboxOptions<unknown>): ResolvedInboxOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('createInbox needs an options object');
  }
  rejectUnknownOptions(options, INBOX_OPTION_KEYS, 'createInbox');
  rejectUnknownOptions(options.backoff, INBOX_BACKOFF_KEYS, 'createInbox', 'backoff');
  const { store } = options;
  if (typeof store !== 'object' || store === null || !store.knex || !store.names) {
    throw new ConfigurationError('createInbox needs a store (createStore(...))');
  }
  const consumer: unknown = options.consumer;
  if (
    typeof consumer !== 'string' ||
    consumer.length < 1 ||
    consumer.length > MAX_CONSUMER_LENGTH
  ) {
    throw new ConfigurationError(
      `consumer must be a string of 1-${MAX_CONSUMER_LENGTH} characters`,
      { consumer },
    );
  }
  // PostgreSQL text cannot hold U+0000: every process() would fail with SQLSTATE 22021.
  storableNameOption(consumer, 'consumer');
  const defaultScope: unknown = options.defaultScope ?? 'default';
  if (
    typeof defaultScope !== 'string' ||
    defaultScope === '' ||
    Buffer.byteLength(defaultScope) > MAX_SCOPE_BYTES
  ) {
    throw new ConfigurationError(
      `defaultScope must be a non-empty string of at most ${MAX_SCOPE_BYTES} bytes`,
      { defaultScope },
    );
  }
  // Every delivery without a scope of its own would be refused for it (see inspectEnvelope).
  storableNameOption(defaultScope, 'defaultScope');
  const maxAttempts = integerOption(options.maxAttempts, 'maxAttempts', 5, 1, 1000);
  const maxIdLength = integerOption(
    options.maxIdLength,
    'maxIdLength',
    255,
    1,
    MAX_ID_LENGTH_LIMIT,
  );
  if (isMysql(store) && maxIdLength > MYSQL_MAX_ID_LENGTH) {
    throw new ConfigurationError(
      `maxIdLength above ${MYSQL_MAX_ID_LENGTH} does not fit a MySQL store: its dedup key holds ` +
        `ids of ${MYSQL_MAX_ID_LENGTH} characters, the most InnoDB's 3072-byte index limit leaves ` +
        `beside the consumer and the scope (4 bytes per utf8mb4 character)`,
      { maxIdLength },
    );
  }

  const headers: unknown = options.fingerprintHeaders ?? [];
  if (!Array.isArray(headers) || headers.some((h) => typeof h !== 'string' || h === '')) {
    throw new ConfigurationError('fingerprintHeaders must be an array of header names', {
      fingerprintHeaders: headers,
    });
  }
  const fingerprintHeaders = [...new Set(headers.map((h: string) => h.toLowerCase()))].sort();

  const retentionMs = integerOption(
    options.retentionMs,
    'retentionMs',
    7 * DAY_MS,
    1,
    3650 * DAY_MS,
  );
  if (options.redeliveryHorizonMs !== undefined) {
    const horizon = integerOption(
      options.redeliveryHorizonMs,
      'redeliveryHorizonMs',
      0,
      0,
      Number.MAX_SAFE_INTEGER,
    );
    assertRetentionCoversRedelivery(retentionMs, horizon);
  }

  const transactions = transactionsOption(options.transactions, store.knex, 'createInbox');
  if (options.outbox !== undefined && typeof options.outbox?.add !== 'function') {
    throw new ConfigurationError('outbox must be an Outbox (createOutbox(...))');
  }
  const logger = resolveLogger(options.logger);
  const meter = resolveMeter(options.meter, ['createCounter', 'createHistogram']);
  const backoff: BackoffOptions = options.backoff ?? {};
  if (typeof backoff !== 'object' || backoff === null) {
    throw new ConfigurationError('backoff must be an object');
  }
  // Checked against the defaults fullJitterBackoff applies; `backoff` itself is kept (`random`).
  backoffBoundsOption(backoff, BACKOFF_DEFAULTS);

  return {
    store,
    consumer,
    defaultScope,
    maxAttempts,
    maxIdLength,
    fingerprintHeaders,
    transactions,
    outbox: options.outbox ?? createOutbox({ store, transactions }),
    ledger: ledgerOption(options.ledger, store, logger, meter),
    decode: optionalFunction(options.decode, 'decode'),
    retentionMs,
    onStep: optionalFunction(options.onStep, 'onStep'),
    logger,
    meter,
    logPayloads: optionalBoolean(options.logPayloads, 'logPayloads', false),
    alwaysCountAttempts: optionalBoolean(options.alwaysCountAttempts, 'alwaysCountAttempts', false),
    backoff,
    classify: optionalFunction(options.classify, 'classify'),
    activityFlushMs: integerOption(
      options.activityFlushMs,
      'activityFlushMs',
      10_000,
      0,
      MAX_ACTIVITY_FLUSH_MS,
    ),
    ...dedupOptions(options, retentionMs),
  };
}

/**
 * The inbox's `ledger`: the runtime of the operations given, or of operations on the inbox's
 * own store. A given ledger on the PGlite the inbox uses is refused now (every `ctx.once`
 * would wait for the connection the handler holds); the default one there is left
 * unavailable, so `ctx.once` says why when a handler calls it.
 */
function ledgerOption(
  value: unknown,
  store: Store,
  logger: Logger,
  meter: Meter,
): OperationsRuntime | { readonly unavailable: string } {
  if (value === undefined) {
    const rt = createOperationsRuntime(resolveOperationsOptions({ store, logger, meter }));
    return ledgerConflict(rt, store) ?? rt;
  }
  const rt = operationsRuntimeOf(value);
  if (rt === undefined) {
    throw new ConfigurationError('ledger must be operations made by createOperations(...)');
  }
  const conflict = ledgerConflict(rt, store);
  if (conflict !== undefined) {
    throw new ConfigurationError(`ledger: ${conflict.unavailable}`);
  }
  return rt;
}
