import type { Meter, ObservableGauge, ObservableResult } from '@opentelemetry/api';
import { observeReplicationSlots } from '../../admin/replication-slot-gauges';
import type { Logger } from '../../observability/logger';
import type { Store } from '../../store/store';

/**
 * Starts the log relay's gauges, attributed with the slot's name: the slot's own, as
 * {@link observeReplicationSlots} reports every slot (`justonce.replication_slot.lag` in bytes,
 * `.retained_wal`, `.active`, `.lost`, …, read from `pg_replication_slots` when the SDK
 * collects, by the active relay and its standbys alike), and
 * `justonce.relay.slot.lag_seconds`: how far the reading relay is behind, from the commit of
 * the oldest event it has read and the broker has not acknowledged (see
 * `RelayStats.log.lagSeconds`), which only the reader knows. Returns the function that stops
 * them. @internal
 */
export function observeSlot(
  context: { readonly store: Store; readonly meter: Meter; readonly logger: Logger },
  slot: string,
  lagSeconds: () => number | null,
): () => void {
  const seconds: ObservableGauge = context.meter.createObservableGauge(
    'justonce.relay.slot.lag_seconds',
    { description: 'How far the outbox relay reading the slot is behind', unit: 's' },
  );
  const attributes = { slot };
  const callback = (result: ObservableResult): void => {
    const lag = lagSeconds();
    if (lag !== null) result.observe(lag, attributes);
  };
  seconds.addCallback(callback);
  // Read when the SDK collects, not from a cache: the relay's figures are about now.
  const { store, meter, logger } = context;
  const slotGauges = observeReplicationSlots({ store, meter, logger, slot, refreshMs: 0 });
  return () => {
    seconds.removeCallback(callback);
    slotGauges.stop();
  };
}
