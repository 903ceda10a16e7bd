import type { Meter } from '@opentelemetry/api';
import type { CircuitState } from '../retry/circuit-breaker';
import type { ResilienceSnapshot } from './types';

/** The breaker state as the `justonce.resilience.breaker.state` gauge reports it. */
const STATE_VALUE: Record<CircuitState, number> = { closed: 0, 'half-open': 1, open: 2 };

/** The metrics of one gate. @internal */
export interface ResilienceInstruments {
  shed(key: string, reason: 'breaker-open' | 'budget-spent'): void;
  retryPaid(): void;
}

/**
 * The gate's OpenTelemetry instruments: counters of shed work and of retries the budget paid
 * for, and gauges of each breaker's state and of the budget left. The gauges read the gate
 * through a weak reference, so a gate whose consumer is gone is not kept alive by the meter.
 * @internal
 */
export function resilienceInstruments(
  meter: Meter,
  name: string,
  gate: { snapshot(): ResilienceSnapshot },
): ResilienceInstruments {
  const shed = meter.createCounter('justonce.resilience.shed', {
    description: 'Work refused without running: an open breaker, or a retry the budget did not pay',
  });
  const paid = meter.createCounter('justonce.resilience.budget.spent', {
    description: 'Retries (redeliveries) the retry budget paid for',
  });
  const ref = new WeakRef(gate);
  meter
    .createObservableGauge('justonce.resilience.breaker.state', {
      description: 'Circuit breaker state: 0 closed, 1 half-open, 2 open',
    })
    .addCallback((result) => {
      for (const { key, state } of ref.deref()?.snapshot().breakers ?? []) {
        result.observe(STATE_VALUE[state], { consumer: name, key });
      }
    });
  meter
    .createObservableGauge('justonce.resilience.budget.remaining', {
      description: 'Retries the retry budget allows now',
    })
    .addCallback((result) => {
      const remaining = ref.deref()?.snapshot().budgetRemaining;
      if (remaining !== undefined) result.observe(remaining, { consumer: name });
    });
  return {
    shed: (key, reason) => shed.add(1, { consumer: name, key, reason }),
    retryPaid: () => paid.add(1, { consumer: name }),
  };
}
