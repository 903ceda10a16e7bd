import type { Clock } from '../retry/clock';
import type { CircuitState, CircuitTrip } from '../retry/circuit-breaker';

/**
 * The retry budget of a consumer or route: redeliveries (retries) at most `ratio` × first
 * deliveries (requests) plus `minRetriesPerSecond` × window seconds, over a sliding window.
 * Beyond it a failure takes the slow path instead of multiplying load.
 */
export interface ResilienceBudgetOptions {
  /** Retries earned per first delivery, in [0, 1]. Default 0.2 (seed 004's 20 %). */
  readonly ratio?: number;
  /** Retries allowed per second of window whatever the traffic, so a quiet consumer can retry. Default 10. */
  readonly minRetriesPerSecond?: number;
  /** Sliding window in milliseconds, at least 10. Default 10 000. */
  readonly windowMs?: number;
  /**
   * The slow path: the least delay before the redelivery of a failure the budget does not pay
   * for, in milliseconds (and the `Retry-After` of an HTTP 429). Default 30 000.
   */
  readonly spentDelayMs?: number;
  /**
   * What a consumer does with a failure the budget does not pay for: `'delay'` redelivers it
   * after `spentDelayMs`; `'dead-letter'` dead-letters it at once with reason
   * `RETRY_BUDGET_SPENT`. Default `'delay'`. HTTP routes always answer 429.
   */
  readonly whenSpent?: 'delay' | 'dead-letter';
}

/**
 * A circuit breaker per consumer (or per key): after `trip`, no new work is taken while the
 * dependency keeps failing; after `openMs` one probe goes through, whose success closes it.
 */
export interface ResilienceBreakerOptions<S> {
  /** When to open. Default `{ consecutiveFailures: 5 }`. */
  readonly trip?: CircuitTrip;
  /** How long an open breaker refuses work before its probe, in milliseconds. Default 30 000. */
  readonly openMs?: number;
  /**
   * One breaker per key this returns for a message (or request), e.g. its tenant or the
   * downstream it calls. Default: one breaker for the whole consumer (route).
   */
  readonly key?: (subject: S) => string;
  /** Most keys tracked at once; the least recently used closed breaker is dropped beyond it. Default 1 000. */
  readonly maxKeys?: number;
}

/**
 * Retry budget, circuit breaker and load shedding of one consumer or HTTP route: the same
 * option object on every transport's consumer and on the HTTP adapters (see
 * docs/load-shedding.md). `S` is what a breaker key is computed from: the message's
 * envelope for a consumer, the framework's request for a route.
 */
export interface ResilienceOptions<S> {
  /** The retry budget, or `false` for none. Default: on, with the defaults above. */
  readonly budget?: ResilienceBudgetOptions | false;
  /** The circuit breaker, or `false` for none. Default: on, with the defaults above. */
  readonly breaker?: ResilienceBreakerOptions<S> | false;
  /** Called synchronously for every {@link ResilienceEvent}; what it throws is dropped. */
  readonly onEvent?: (event: ResilienceEvent) => void;
  /** Time source. Default the system clock. */
  readonly clock?: Clock;
}

/**
 * What the resilience layer did:
 * - `breaker`: a breaker changed state (`to: 'open'` stops intake, `'half-open'` lets one
 *   probe through, `'closed'` resumes);
 * - `shed`: work was refused without running: `breaker-open` (held for later: a consumer's
 *   delivery stays in flight, an HTTP request gets 503) or `budget-spent` (a retry was
 *   pushed to the slow path: a later redelivery, an HTTP 429).
 */
export type ResilienceEvent =
  | {
      readonly type: 'breaker';
      /** The consumer or route name. */
      readonly name: string;
      readonly key: string;
      readonly from: CircuitState;
      readonly to: CircuitState;
      readonly at: number;
    }
  | {
      readonly type: 'shed';
      readonly name: string;
      readonly key: string;
      readonly reason: 'breaker-open' | 'budget-spent';
      /** How long the work waits before it is tried again. */
      readonly retryAfterMs: number;
    };

/** A moment's view of one consumer's (route's) breakers and budget, for status and dashboards. */
export interface ResilienceSnapshot {
  readonly name: string;
  /**
   * Each tracked breaker key, its state, and since when it is in it (on the gate's clock,
   * milliseconds: the time it was first tracked for a closed breaker never opened).
   */
  readonly breakers: ReadonlyArray<{
    readonly key: string;
    readonly state: CircuitState;
    readonly since: number;
  }>;
  /** Whole retries the budget allows now; `undefined` without a budget. */
  readonly budgetRemaining: number | undefined;
  /** Work refused since start, by reason. */
  readonly shed: { readonly breakerOpen: number; readonly budgetSpent: number };
  /**
   * The figures over the last `windowMs` (the budget's window; its default without a budget).
   */
  readonly window: ResilienceWindow;
}

/** What a consumer's (route's) gate counted over its budget's sliding window. */
export interface ResilienceWindow {
  /** The window's length in milliseconds. */
  readonly windowMs: number;
  /** First deliveries (requests), each earning the budget `ratio` of a retry. */
  readonly firstDeliveries: number;
  /** Retries the budget paid for. */
  readonly retriesPaid: number;
  /** Retries the budget did not pay for, sent to the slow path (`spentDelayMs`). */
  readonly retriesShed: number;
  /** Work refused because its breaker was open. */
  readonly breakerSheds: number;
}
