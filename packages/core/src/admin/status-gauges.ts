import type { BatchObservableResult, Meter } from '@opentelemetry/api';
import type { Admin } from './types';
import { gaugeMeter, observableGauge, observeInBatch } from './batch-gauges';
import { cachedRead } from './cached-read';
import { durationOption, optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { resolveLogger, type Logger } from '../observability/logger';

/** Options of {@link observeStoreStatus}. */
export interface StoreStatusGaugesOptions {
  /** OpenTelemetry meter. Default: the global provider's `@justonce/core` meter. */
  readonly meter?: Meter;
  /**
   * Least time between two status reads, in milliseconds: collections within it report the
   * figures of the last read. Default 15 000.
   */
  readonly refreshMs?: number;
  /** Where a failed read is logged. Default: nowhere. */
  readonly logger?: Logger;
}

/** What {@link observeStoreStatus} returns. */
export interface StoreStatusGauges {
  /** Stops reporting (the gauges stay registered, without data points). Idempotent. */
  stop(): void;
}

const GAUGES_KEYS = optionKeys<StoreStatusGaugesOptions>()(['meter', 'refreshMs', 'logger']);

/**
 * Reports the figures of `admin.status()` as OpenTelemetry observable gauges, for alerting:
 *
 * - `justonce.outbox.pending` (`destination`): events waiting to be published;
 * - `justonce.outbox.oldest_pending_age` (`destination`, seconds): age of the oldest of them,
 *   0 when none waits;
 * - `justonce.outbox.dead` (`destination`): events the relay gave up on;
 * - `justonce.dead_letters.waiting` (`consumer`, `reason`): dead letters not requeued;
 * - `justonce.operations.in_progress` (`operation`): records in progress within their lease;
 * - `justonce.operations.past_lease` (`operation`): records in progress past their lease.
 *
 * The store is read when the SDK collects, at most once per `refreshMs` (several exporters
 * or a short export interval cost no extra queries). A failed read is logged and the last
 * figures are reported again; nothing is thrown into the SDK.
 *
 * @example
 * ```ts
 * const gauges = observeStoreStatus(createAdmin(store), { refreshMs: 30_000 });
 * // on shutdown
 * gauges.stop();
 * ```
 */
export function observeStoreStatus(
  admin: Admin,
  options: StoreStatusGaugesOptions = {},
): StoreStatusGauges {
  if (typeof admin !== 'object' || admin === null || typeof admin.status !== 'function') {
    throw new ConfigurationError('observeStoreStatus needs an admin (see createAdmin)');
  }
  rejectUnknownOptions(options, GAUGES_KEYS, 'observeStoreStatus');
  const refreshMs = durationOption(options.refreshMs, 'refreshMs', 15_000, 0);
  const meter = gaugeMeter(options.meter);
  const read = cachedRead(
    () => admin.status(),
    refreshMs,
    resolveLogger(options.logger),
    'status gauges: reading the store status',
  );

  const gauge = (name: string, description: string, unit?: string) =>
    observableGauge(meter, name, description, unit);
  const pending = gauge('justonce.outbox.pending', 'Outbox events waiting to be published');
  const oldest = gauge(
    'justonce.outbox.oldest_pending_age',
    'Age of the oldest pending outbox event',
    's',
  );
  const dead = gauge('justonce.outbox.dead', 'Outbox events the relay gave up on');
  const waiting = gauge('justonce.dead_letters.waiting', 'Dead letters not requeued');
  const inProgress = gauge(
    'justonce.operations.in_progress',
    'Operation records in progress within their lease',
  );
  const pastLease = gauge(
    'justonce.operations.past_lease',
    'Operation records in progress past their lease (owner dead or hung)',
  );
  const observables = [pending, oldest, dead, waiting, inProgress, pastLease];

  const callback = async (result: BatchObservableResult): Promise<void> => {
    const status = await read();
    if (status === undefined) return;
    for (const d of status.outbox) {
      const attributes = { destination: d.destination };
      result.observe(pending, d.pending, attributes);
      result.observe(oldest, d.oldestPendingSeconds ?? 0, attributes);
      result.observe(dead, d.dead, attributes);
    }
    for (const l of status.deadLetters) {
      result.observe(waiting, l.count, { consumer: l.consumer, reason: l.reason });
    }
    for (const o of status.operations) {
      result.observe(inProgress, o.inProgress, { operation: o.operation });
      result.observe(pastLease, o.pastLease, { operation: o.operation });
    }
  };
  return observeInBatch(meter, observables, callback);
}
