import type { Clock } from '../retry/clock';
import { createSlidingCounter } from '../retry/sliding-window';
import type { ResilienceWindow } from './types';

/** What a gate counts over its window. @internal */
export type WindowEvent = 'first' | 'paid' | 'budget-shed' | 'breaker-shed';

const SLOT: Readonly<Record<WindowEvent, number>> = {
  first: 0,
  paid: 1,
  'budget-shed': 2,
  'breaker-shed': 3,
};

/** A gate's {@link ResilienceWindow} figures, counted over the last `windowMs`. @internal */
export function createWindowCounts(
  windowMs: number,
  clock: Clock,
): { count(event: WindowEvent): void; figures(): ResilienceWindow } {
  const counter = createSlidingCounter(windowMs, 4);
  return {
    count: (event) => counter.add(SLOT[event], clock.now()),
    figures() {
      const now = clock.now();
      return {
        windowMs,
        firstDeliveries: counter.total(SLOT.first, now),
        retriesPaid: counter.total(SLOT.paid, now),
        retriesShed: counter.total(SLOT['budget-shed'], now),
        breakerSheds: counter.total(SLOT['breaker-shed'], now),
      };
    },
  };
}
