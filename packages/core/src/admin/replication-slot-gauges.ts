import type { BatchObservableResult, Meter, Observable } from '@opentelemetry/api';
import { durationOption, optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { resolveLogger, type Logger } from '../observability/logger';
import type { Store } from '../store/store';
import { gaugeMeter, observableGauge, observeInBatch } from './batch-gauges';
import { cachedRead } from './cached-read';
import { readReplicationSlots, validateSlotName } from './replication-slots';
import type { ReplicationSlotStatus } from './types';

/** Options of {@link observeReplicationSlots}. An unknown key is refused. */
export interface ReplicationSlotGaugesOptions {
  /** The store whose database's logical replication slots are reported. */
  readonly store: Store;
  /** OpenTelemetry meter. Default: the global provider's `@justonce/core` meter. */
  readonly meter?: Meter;
  /**
   * Only this slot (a log relay reports its own). Default: every logical slot of the
   * database.
   */
  readonly slot?: string;
  /**
   * Least time between two reads of the slots, in milliseconds: collections within it report
   * the figures of the last read. Default 15 000.
   */
  readonly refreshMs?: number;
  /** Where a failed read is logged. Default: nowhere. */
  readonly logger?: Logger;
}

/** What {@link observeReplicationSlots} returns. */
export interface ReplicationSlotGauges {
  /** Stops reporting (the gauges stay registered, without data points). Idempotent. */
  stop(): void;
}

const OPTION_KEYS = optionKeys<ReplicationSlotGaugesOptions>()([
  'store',
  'meter',
  'slot',
  'refreshMs',
  'logger',
]);

/** The gauges, by what they report. */
interface SlotInstruments {
  readonly active: Observable;
  readonly lag: Observable;
  readonly lagTime: Observable;
  readonly retained: Observable;
  readonly safeWalSize: Observable;
  readonly lost: Observable;
}

function createInstruments(meter: Meter): SlotInstruments {
  const gauge = (name: string, description: string, unit?: string): Observable =>
    observableGauge(meter, name, description, unit);
  return {
    active: gauge('justonce.replication_slot.active', 'Whether a connection reads the slot (1/0)'),
    lag: gauge(
      'justonce.replication_slot.lag',
      'WAL written since the position the slot reader confirmed',
      'By',
    ),
    lagTime: gauge(
      'justonce.replication_slot.lag_time',
      'Time between writing WAL and the slot reader confirming it',
      's',
    ),
    retained: gauge(
      'justonce.replication_slot.retained_wal',
      'WAL the slot keeps PostgreSQL from removing',
      'By',
    ),
    safeWalSize: gauge(
      'justonce.replication_slot.safe_wal_size',
      'WAL that can still be written before the slot risks being lost (max_slot_wal_keep_size)',
      'By',
    ),
    lost: gauge(
      'justonce.replication_slot.lost',
      'Whether the WAL the slot needs was removed (1/0): its reader must be seeded anew',
    ),
  };
}

/** Observes one slot's figures; unknown ones (`null`) get no data point. */
function observeSlot(
  result: BatchObservableResult,
  gauges: SlotInstruments,
  slot: ReplicationSlotStatus,
): void {
  const attributes = { slot: slot.name };
  const observe = (gauge: Observable, value: number | null): void => {
    if (value !== null) result.observe(gauge, value, attributes);
  };
  observe(gauges.active, slot.active ? 1 : 0);
  observe(gauges.lag, slot.lagBytes);
  observe(gauges.lagTime, slot.lagSeconds);
  observe(gauges.retained, slot.retainedBytes);
  observe(gauges.safeWalSize, slot.safeWalSizeBytes);
  observe(gauges.lost, slot.walStatus === 'lost' ? 1 : 0);
}

/**
 * Reports the logical replication slots of the store's database as OpenTelemetry observable
 * gauges, each with the attribute `slot`:
 *
 * - `justonce.replication_slot.active`: 1 while a connection reads the slot, else 0;
 * - `justonce.replication_slot.lag` (bytes): WAL written since the position its reader
 *   confirmed;
 * - `justonce.replication_slot.lag_time` (seconds): how far behind the reader is, where
 *   PostgreSQL can tell (see `ReplicationSlotStatus.lagSeconds`); no point otherwise;
 * - `justonce.replication_slot.retained_wal` (bytes): WAL kept on disk for the slot;
 * - `justonce.replication_slot.safe_wal_size` (bytes): WAL that can still be written before
 *   the slot risks being lost; only when `max_slot_wal_keep_size` bounds it;
 * - `justonce.replication_slot.lost`: 1 once the WAL the slot needs was removed.
 *
 * The database is read when the SDK collects, at most once per `refreshMs`, with the query of
 * `admin.replicationSlots()`. A failed read is logged and the last figures are reported again;
 * nothing is thrown into the SDK. On PGlite and MySQL, which have no slots, the gauges stay
 * without data points.
 *
 * @example
 * ```ts
 * const gauges = observeReplicationSlots({ store, meter, slot: 'justonce_outbox' });
 * // on shutdown
 * gauges.stop();
 * ```
 *
 * @throws ConfigurationError for a missing store, a bad slot name or option, an unknown key.
 */
export function observeReplicationSlots(
  options: ReplicationSlotGaugesOptions,
): ReplicationSlotGauges {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('observeReplicationSlots needs options with a store');
  }
  rejectUnknownOptions(options, OPTION_KEYS, 'observeReplicationSlots');
  const { store } = options;
  if (typeof store !== 'object' || store === null || !store.knex || !store.names) {
    throw new ConfigurationError('observeReplicationSlots needs a store (see createStore)');
  }
  const only = options.slot === undefined ? undefined : validateSlotName(options.slot);
  const refreshMs = durationOption(options.refreshMs, 'refreshMs', 15_000, 0);
  const meter = gaugeMeter(options.meter);
  const read = cachedRead(
    () => readReplicationSlots(store),
    refreshMs,
    resolveLogger(options.logger),
    'replication slot gauges: reading the slots',
  );
  const gauges = createInstruments(meter);
  const observables = Object.values(gauges);
  const callback = async (result: BatchObservableResult): Promise<void> => {
    for (const slot of (await read()) ?? []) {
      if (only === undefined || slot.name === only) observeSlot(result, gauges, slot);
    }
  };
  return observeInBatch(meter, observables, callback);
}
