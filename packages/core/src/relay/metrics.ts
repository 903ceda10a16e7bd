import type { Counter, Meter, ObservableGauge, BatchObservableCallback } from '@opentelemetry/api';
import type { TableStats } from './sql/stats';

/** The relay's OpenTelemetry instruments. @internal */
export interface RelayInstruments {
  readonly published: Counter;
  readonly failed: Counter;
  readonly dead: Counter;
  /** Starts reporting the table gauges from `read`; returns a function that stops it. */
  observeTable(read: () => Promise<TableStats>): () => void;
}

/**
 * Creates the relay's instruments: counters `justonce.relay.published`, `.failed`, `.dead`,
 * and observable gauges `justonce.outbox.pending` and `justonce.outbox.oldest_pending_age`
 * (milliseconds), read from the table when the SDK collects.
 */
export function createRelayInstruments(meter: Meter): RelayInstruments {
  const published = meter.createCounter('justonce.relay.published', {
    description: 'Outbox events published and marked',
  });
  const failed = meter.createCounter('justonce.relay.failed', {
    description: 'Failed publish attempts of outbox events',
  });
  const dead = meter.createCounter('justonce.relay.dead', {
    description: 'Outbox events given up on after their last attempt',
  });
  const pending: ObservableGauge = meter.createObservableGauge('justonce.outbox.pending', {
    description: 'Pending outbox events',
  });
  const oldest: ObservableGauge = meter.createObservableGauge(
    'justonce.outbox.oldest_pending_age',
    { description: 'Age of the oldest pending outbox event', unit: 'ms' },
  );
  return {
    published,
    failed,
    dead,
    observeTable(read) {
      const callback: BatchObservableCallback = async (result) => {
        const stats = await read();
        result.observe(pending, stats.pending);
        result.observe(oldest, stats.oldestPendingAgeMs);
      };
      meter.addBatchObservableCallback(callback, [pending, oldest]);
      return () => meter.removeBatchObservableCallback(callback, [pending, oldest]);
    },
  };
}
