import type { Meter } from '@opentelemetry/api';
import { resolveMeter } from '../observability/metrics';
import {
  createCircuitBreaker,
  type CircuitBreaker,
  type CircuitPermit,
} from '../retry/circuit-breaker';
import { createRetryBudget, RETRY_BUDGET_DEFAULTS, type RetryBudget } from '../retry/retry-budget';
import { resilienceInstruments, type ResilienceInstruments } from './instruments';
import { createWindowCounts } from './window';
import type { ResolvedResilience } from './options';
import type { ResilienceEvent, ResilienceSnapshot } from './types';

/** The key of the one breaker of a gate whose options name no `key` function. */
export const WHOLE_CONSUMER_KEY = '*';

/** The gate let the work in: report how it went on `permit` (absent without a breaker). */
export interface Admitted {
  readonly admitted: true;
  readonly key: string;
  readonly permit: CircuitPermit | undefined;
}

/** The breaker of `key` is open (or its probe is out): the work waits `retryAfterMs`. */
export interface Refused {
  readonly admitted: false;
  readonly key: string;
  readonly retryAfterMs: number;
}

/**
 * The one place that decides for a consumer or an HTTP route: which work a breaker lets in,
 * whether a retry is paid for by the budget, and what is reported (events, metrics). The
 * transports and the HTTP engine only act on its answers. @internal
 */
export interface ResilienceGate<S> {
  readonly name: string;
  /** The slow path's delay (budget spent); 0 without a budget. */
  readonly spentDelayMs: number;
  /** What a consumer does with a failure the budget does not pay for. */
  readonly whenSpent: 'delay' | 'dead-letter';
  /**
   * The breaker key of `subject`: the `key` option's answer, {@link WHOLE_CONSUMER_KEY}
   * without one, or when it throws or answers no non-empty string (a message the user's
   * function cannot read must not stop the consumer).
   */
  keyOf(subject: S): string;
  /** Asks the breaker of `key` for a permit; a refusal is counted as shed. */
  admit(key: string): Admitted | Refused;
  /**
   * Reports the admitted work: `failure` for a fault of the infrastructure (a retriable
   * error), `success` when the dependency answered (even that the request was wrong),
   * `neutral` when nothing was learnt. Returns the wait before the key's next work when its
   * breaker is open now (this failure tripped it, or the probe failed), else 0.
   */
  report(admitted: Admitted, verdict: 'success' | 'failure' | 'neutral'): number;
  /** A first delivery (a request): it earns the budget `ratio` of a retry. */
  earn(): void;
  /** A retry about to be scheduled for `key`: true when the budget pays; else counted as shed. */
  spend(key: string): boolean;
  /** The breakers and the budget now. */
  snapshot(): ResilienceSnapshot;
}

/** Breakers by key, the least recently used first, at most `maxKeys` of them. */
function breakerMap(
  settings: { readonly maxKeys: number },
  create: (key: string) => CircuitBreaker,
): { get(key: string): CircuitBreaker; entries(): [string, CircuitBreaker][] } {
  const map = new Map<string, CircuitBreaker>();
  return {
    get(key) {
      let breaker = map.get(key);
      if (breaker !== undefined) {
        map.delete(key);
      } else {
        breaker = create(key);
        if (map.size >= settings.maxKeys) {
          // Drop the least recently used closed breaker; an open one holds work back.
          let victim: string | undefined;
          for (const [k, b] of map) {
            if (b.state === 'closed') {
              victim = k;
              break;
            }
          }
          victim ??= map.keys().next().value;
          if (victim !== undefined) map.delete(victim);
        }
      }
      map.set(key, breaker);
      return breaker;
    },
    entries: () => [...map],
  };
}

/**
 * Creates the {@link ResilienceGate} of the consumer or route `name`. `observe` sees every
 * event after `onEvent` (the consumer's state recorder); it must not throw. @internal
 */
export function createResilienceGate<S>(
  name: string,
  settings: ResolvedResilience<S>,
  meter?: Meter,
  observe?: (event: ResilienceEvent) => void,
): ResilienceGate<S> {
  const { clock, breaker: breakerSettings, budget: budgetSettings } = settings;
  const emit = (event: ResilienceEvent): void => {
    try {
      settings.onEvent?.(event);
    } catch {
      // A listener's failure must not change what happens to the work.
    }
    observe?.(event);
  };
  const windowMs = budgetSettings?.windowMs ?? RETRY_BUDGET_DEFAULTS.windowMs;
  const windowCounts = createWindowCounts(windowMs, clock);
  /** Since when each breaker is in its state, on `clock`. */
  const since = new WeakMap<CircuitBreaker, number>();
  const budget: RetryBudget | undefined =
    budgetSettings === undefined
      ? undefined
      : createRetryBudget({
          ratio: budgetSettings.ratio,
          minRetriesPerSecond: budgetSettings.minRetriesPerSecond,
          windowMs: budgetSettings.windowMs,
          clock,
        });
  const breakers =
    breakerSettings === undefined
      ? undefined
      : breakerMap(breakerSettings, (key) => {
          const breaker = createCircuitBreaker({
            trip: breakerSettings.trip,
            openMs: breakerSettings.openMs,
            clock,
          });
          since.set(breaker, clock.now());
          breaker.onStateChange(({ from, to, at }) => {
            since.set(breaker, at);
            emit({ type: 'breaker', name, key, from, to, at });
          });
          return breaker;
        });
  const keyOf = (subject: S): string => {
    if (breakerSettings?.key === undefined) return WHOLE_CONSUMER_KEY;
    try {
      const key = breakerSettings.key(subject);
      return typeof key === 'string' && key !== '' ? key : WHOLE_CONSUMER_KEY;
    } catch {
      return WHOLE_CONSUMER_KEY;
    }
  };
  const shed = { breakerOpen: 0, budgetSpent: 0 };
  const spentDelayMs = budgetSettings?.spentDelayMs ?? 0;

  const gate: ResilienceGate<S> = {
    name,
    spentDelayMs,
    whenSpent: budgetSettings?.whenSpent ?? 'delay',
    keyOf,
    admit(key) {
      if (breakers === undefined) return { admitted: true, key, permit: undefined };
      const breaker = breakers.get(key);
      const permit = breaker.tryAcquire();
      if (permit !== undefined) return { admitted: true, key, permit };
      const retryAfterMs = breaker.retryAfterMs();
      shed.breakerOpen += 1;
      windowCounts.count('breaker-shed');
      instruments.shed(key, 'breaker-open');
      emit({ type: 'shed', name, key, reason: 'breaker-open', retryAfterMs });
      return { admitted: false, key, retryAfterMs };
    },
    report(admitted, verdict) {
      const { permit } = admitted;
      if (permit === undefined || breakers === undefined) return 0;
      if (verdict === 'success') permit.success();
      else if (verdict === 'failure') permit.failure();
      else permit.release();
      const breaker = breakers.get(admitted.key);
      return breaker.state === 'open' ? Math.max(1, breaker.retryAfterMs()) : 0;
    },
    earn() {
      windowCounts.count('first');
      budget?.recordSuccess();
    },
    spend(key) {
      if (budget === undefined) return true;
      if (budget.tryWithdraw()) {
        windowCounts.count('paid');
        instruments.retryPaid();
        return true;
      }
      shed.budgetSpent += 1;
      windowCounts.count('budget-shed');
      instruments.shed(key, 'budget-spent');
      emit({ type: 'shed', name, key, reason: 'budget-spent', retryAfterMs: spentDelayMs });
      return false;
    },
    snapshot() {
      return {
        name,
        breakers: (breakers?.entries() ?? []).map(([key, b]) => ({
          key,
          state: b.state,
          since: since.get(b) ?? clock.now(),
        })),
        budgetRemaining: budget?.available(),
        shed: { ...shed },
        window: windowCounts.figures(),
      };
    },
  };
  // Read by the methods above only once they are called, after this line.
  const instruments: ResilienceInstruments = resilienceInstruments(resolveMeter(meter), name, gate);
  return gate;
}
