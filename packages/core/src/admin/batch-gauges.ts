import type { BatchObservableCallback, Meter, Observable } from '@opentelemetry/api';
import { resolveMeter } from '../observability/metrics';

/** The `meter` option of a gauge reporter: the given meter, checked, or the global one. @internal */
export function gaugeMeter(meter: Meter | undefined): Meter {
  return resolveMeter(meter, [
    'createObservableGauge',
    'addBatchObservableCallback',
    'removeBatchObservableCallback',
  ]);
}

/** An observable gauge of `meter`, with a unit when one is given. @internal */
export function observableGauge(
  meter: Meter,
  name: string,
  description: string,
  unit?: string,
): Observable {
  return meter.createObservableGauge(name, {
    description,
    ...(unit === undefined ? {} : { unit }),
  });
}

/** Registers `callback` for `observables` until the returned `stop` (idempotent). @internal */
export function observeInBatch(
  meter: Meter,
  observables: Observable[],
  callback: BatchObservableCallback,
): { stop(): void } {
  meter.addBatchObservableCallback(callback, observables);
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      meter.removeBatchObservableCallback(callback, observables);
    },
  };
}
