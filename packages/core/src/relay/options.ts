import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Meter } from '@opentelemetry/api';
import { ConfigurationError } from '../errors/configuration-error';
import { resolveLogger, type Logger } from '../observability/logger';
import { resolveMeter } from '../observability/metrics';
import type { Store } from '../store/store';
import type { Publisher } from '../transport/publisher';
import type { RelayClaim, RelayOptions } from './types';
import { integerOption, optionKeys, rejectUnknownOptions } from '../config/options';
import { backoffBoundsOption } from '../retry/backoff';
import { resolveLogOptions, type ResolvedLogOptions } from './log/options';

/** The upper bound of the per-call integer options, which have none of their own. @internal */
export const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/** {@link RelayOptions} with every default applied and checked. @internal */
export interface ResolvedRelayOptions {
  readonly store: Store;
  readonly publisher: Publisher;
  readonly batchSize: number;
  readonly concurrency: number;
  readonly maxConcurrentPublishes: number;
  readonly maxAttempts: number;
  readonly backoff: { readonly baseMs: number; readonly capMs: number };
  readonly leaseMs: number;
  readonly claimHoldMs: number;
  readonly publishTimeoutMs: number;
  readonly pollIntervalMs: number;
  readonly notify: boolean;
  readonly onPublished: 'keep' | 'delete';
  readonly claim: RelayClaim;
  readonly ownerId: string;
  readonly logger: Logger;
  readonly meter: Meter;
  /** The `'log'` mode's settings; `null` in `'poll'` mode. */
  readonly log: ResolvedLogOptions | null;
}

const RELAY_KEYS = optionKeys<RelayOptions>()([
  'store',
  'publisher',
  'batchSize',
  'concurrency',
  'maxConcurrentPublishes',
  'maxAttempts',
  'backoff',
  'leaseMs',
  'claimHoldMs',
  'publishTimeoutMs',
  'pollIntervalMs',
  'notify',
  'onPublished',
  'claim',
  'ownerId',
  'logger',
  'meter',
  'mode',
  'log',
]);
const BACKOFF_KEYS = optionKeys<NonNullable<RelayOptions['backoff']>>()(['baseMs', 'capMs']);

/**
 * Validates `claim`: `'batch'` or `'per-key'`, the latter only on a PostgreSQL store with the
 * distributable schema, the one whose outbox rows carry the distribution key its statements
 * filter by (PGlite and MySQL keep one database: nothing to route).
 */
function claimOption(value: unknown, store: Store): RelayClaim {
  if (value === undefined) return 'batch';
  if (value !== 'batch' && value !== 'per-key') {
    throw new ConfigurationError("claim must be 'batch' or 'per-key'", { claim: value });
  }
  if (
    value === 'per-key' &&
    (store.dialect !== 'postgres' || store.distribution !== 'distributable')
  ) {
    throw new ConfigurationError(
      "claim 'per-key' needs a PostgreSQL store with distribution 'distributable'",
      { claim: value, dialect: store.dialect, distribution: store.distribution },
    );
  }
  return value;
}

/** Applies defaults to relay options and refuses anything that cannot work. @internal */
export function resolveRelayOptions(options: RelayOptions): ResolvedRelayOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('createRelay needs options with a store and a publisher');
  }
  rejectUnknownOptions(options, RELAY_KEYS, 'createRelay');
  rejectUnknownOptions(options.backoff, BACKOFF_KEYS, 'createRelay', 'backoff');
  const { store, publisher } = options;
  if (!store || typeof store.knex !== 'function' || !store.names) {
    throw new ConfigurationError('createRelay needs a store (createStore(...))');
  }
  if (!publisher || typeof publisher.publish !== 'function') {
    throw new ConfigurationError('createRelay needs a publisher with a publish(messages) method');
  }
  if (publisher.messagingSystem !== undefined && typeof publisher.messagingSystem !== 'string') {
    throw new ConfigurationError('publisher.messagingSystem must be a string or omitted', {
      messagingSystem: typeof publisher.messagingSystem,
    });
  }
  const log = resolveLogOptions(options, store);
  const leaseMs = integerOption(options.leaseMs, 'leaseMs', 30_000, 100, 24 * 3_600_000);
  const backoff = backoffBoundsOption(
    options.backoff,
    { baseMs: 200, capMs: 60_000 },
    { baseMs: 3_600_000, capMs: 24 * 3_600_000 },
  );
  if (options.notify !== undefined && typeof options.notify !== 'boolean') {
    throw new ConfigurationError('notify must be a boolean', { notify: options.notify });
  }
  const onPublished = options.onPublished ?? 'delete';
  if (onPublished !== 'keep' && onPublished !== 'delete') {
    throw new ConfigurationError("onPublished must be 'keep' or 'delete'", { onPublished });
  }
  const claim = claimOption(options.claim, store);
  const ownerId = options.ownerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  if (typeof ownerId !== 'string' || ownerId === '' || ownerId.length > 200) {
    throw new ConfigurationError('ownerId must be a non-empty string of at most 200 characters', {
      ownerId,
    });
  }
  const concurrency = integerOption(options.concurrency, 'concurrency', 2, 1, 64);
  const maxConcurrentPublishes = integerOption(
    options.maxConcurrentPublishes,
    'maxConcurrentPublishes',
    concurrency,
    1,
    concurrency,
  );
  // The hold must end well inside the lease, with room for the batch in flight at its end.
  const claimHoldMs = integerOption(
    options.claimHoldMs,
    'claimHoldMs',
    Math.min(1_000, Math.floor(leaseMs / 3)),
    0,
    Math.floor(leaseMs / 2),
  );
  // A held cycle publishes in as many lanes as there are publish slots. A lane may wait for
  // the slots to turn over before its own call, all while its cycle holds its claim, so the
  // waits and the call must fit in the lease.
  const lanes = claimHoldMs > 0 ? maxConcurrentPublishes : 1;
  const waits = Math.ceil((concurrency * lanes) / maxConcurrentPublishes);
  const publishTimeoutMs =
    log === null
      ? leasedPublishTimeout(options.publishTimeoutMs, leaseMs, waits, {
          concurrency,
          maxConcurrentPublishes,
          claimHoldMs,
        })
      : // No claim to outlast in the log mode: the stream waits for the call, whatever it takes.
        integerOption(options.publishTimeoutMs, 'publishTimeoutMs', 10_000, 1, 3_600_000);
  return {
    store,
    publisher,
    batchSize: integerOption(options.batchSize, 'batchSize', 200, 1, 10_000),
    concurrency,
    maxConcurrentPublishes,
    maxAttempts: integerOption(options.maxAttempts, 'maxAttempts', 10, 1, 1_000_000),
    backoff,
    leaseMs,
    // PGlite has one connection: a cycle that kept its claim would keep producers out.
    claimHoldMs: store.dialect === 'pglite' ? 0 : claimHoldMs,
    publishTimeoutMs,
    pollIntervalMs: integerOption(options.pollIntervalMs, 'pollIntervalMs', 1_000, 1, 3_600_000),
    notify: options.notify ?? true,
    onPublished,
    claim,
    ownerId,
    logger: resolveLogger(options.logger),
    meter: resolveMeter(options.meter, [
      'createCounter',
      'createObservableGauge',
      'addBatchObservableCallback',
      'removeBatchObservableCallback',
    ]),
    log,
  };
}

/**
 * The polling mode's `publishTimeoutMs`: a cycle holds its claim while it waits for its own
 * call and those ahead of it, all of which must fit in the lease.
 */
function leasedPublishTimeout(
  value: number | undefined,
  leaseMs: number,
  waits: number,
  context: { concurrency: number; maxConcurrentPublishes: number; claimHoldMs: number },
): number {
  const publishTimeoutMs = integerOption(
    value,
    'publishTimeoutMs',
    Math.min(10_000, Math.floor(leaseMs / (waits + 1))),
    1,
    leaseMs,
  );
  if (publishTimeoutMs >= leaseMs) {
    throw new ConfigurationError('publishTimeoutMs must be below leaseMs', {
      publishTimeoutMs,
      leaseMs,
    });
  }
  if (publishTimeoutMs * waits >= leaseMs) {
    throw new ConfigurationError(
      'publishTimeoutMs times the publish calls a cycle may wait for (its own included) must be below leaseMs',
      { publishTimeoutMs, ...context, waits, leaseMs },
    );
  }
  return publishTimeoutMs;
}
