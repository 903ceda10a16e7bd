import type { BatchObservableCallback, Meter, ObservableGauge } from '@opentelemetry/api';
import type { SlotPosition } from './setup';

/** What the slot gauges read when the SDK collects. @internal */
export interface SlotReadings {
  /** The slot's position from the server; null when the slot is gone. */
  position(): Promise<SlotPosition | null>;
  /** This relay's lag in seconds, or null while it has never read the slot. */
  lagSeconds(): number | null;
}

/**
 * Starts the log relay's gauges, attributed with the slot's name: `justonce.relay.slot.lag`
 * (bytes of WAL the slot retains: the server's position minus the slot's confirmed one,
 * reported by the active relay and its standbys alike) and
 * `justonce.relay.slot.lag_seconds` (how far behind the reading relay is; see
 * `RelayStats.log.lagSeconds`). Returns the function that stops them. @internal
 */
export function observeSlot(meter: Meter, slot: string, read: SlotReadings): () => void {
  const bytes: ObservableGauge = meter.createObservableGauge('justonce.relay.slot.lag', {
    description: 'WAL the outbox relay slot retains beyond its confirmed position',
    unit: 'By',
  });
  const seconds: ObservableGauge = meter.createObservableGauge('justonce.relay.slot.lag_seconds', {
    description: 'How far the outbox relay reading the slot is behind',
    unit: 's',
  });
  const attributes = { slot };
  const callback: BatchObservableCallback = async (result) => {
    const lag = read.lagSeconds();
    if (lag !== null) result.observe(seconds, lag, attributes);
    const position = await read.position();
    if (position !== null) result.observe(bytes, position.lagBytes, attributes);
  };
  meter.addBatchObservableCallback(callback, [bytes, seconds]);
  return () => meter.removeBatchObservableCallback(callback, [bytes, seconds]);
}
