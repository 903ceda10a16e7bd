import { ConfigurationError } from '../errors';
import type { Clock } from './clock';
import { systemClock } from './clock';
import type { Dispose } from './listeners';
import { createListenerSet } from './listeners';
import { createSlidingCounter } from './sliding-window';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { requireNumber } from './validate';

/**
 * - `'closed'`: calls flow, outcomes are counted;
 * - `'open'`: calls are refused until `openMs` has passed;
 * - `'half-open'`: exactly one probe call is let through; its success closes the breaker,
 *   its failure opens it again.
 */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** Open after this many failures in a row (any success resets the run). */
export interface ConsecutiveFailuresTrip {
  /** Failures in a row that open the breaker; an integer >= 1. */
  readonly consecutiveFailures: number;
}

/** Open when the share of failures over a sliding window reaches a threshold. */
export interface FailureRatioTrip {
  /** Failure share in (0, 1] that opens the breaker. */
  readonly failureRatio: number;
  /** Calls the window must hold before the ratio counts, so one early failure cannot trip it. Default 10. */
  readonly minimumCalls?: number;
  /** Sliding window in milliseconds, at least 10. Default 10 000. */
  readonly windowMs?: number;
}

/** When a closed breaker opens. */
export type CircuitTrip = ConsecutiveFailuresTrip | FailureRatioTrip;

/** Options of {@link createCircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** When to open. Default `{ consecutiveFailures: 5 }`. */
  readonly trip?: CircuitTrip;
  /**
   * How long an open breaker refuses calls before letting one probe through, in milliseconds.
   * Also how long a probe may stay unanswered before another is let through. Default 30 000.
   */
  readonly openMs?: number;
  /** Time source. Default {@link systemClock}. */
  readonly clock?: Clock;
}

/**
 * Permission to make one call. Report its outcome exactly once; later reports are ignored, and
 * so are reports from before the breaker last changed state.
 */
export interface CircuitPermit {
  /** The dependency answered well (or answered that the request itself was wrong). */
  success(): void;
  /** The dependency failed, timed out or throttled. */
  failure(): void;
  /** The call ended without telling us anything about the dependency (e.g. it was cancelled). */
  release(): void;
}

/** A state change reported to {@link CircuitBreaker.onStateChange} listeners. */
export interface CircuitStateChange {
  readonly from: CircuitState;
  readonly to: CircuitState;
  /** Clock time of the change. */
  readonly at: number;
}

/**
 * A circuit breaker guarding one dependency. Share one instance between every caller of that
 * dependency and no other.
 */
export interface CircuitBreaker {
  /**
   * The current state. An open breaker reports `'open'` until the first {@link CircuitBreaker.tryAcquire}
   * after `openMs`, which moves it to `'half-open'` and hands out the probe.
   */
  readonly state: CircuitState;
  /** Milliseconds until an open breaker lets a probe through; 0 when not open. */
  retryAfterMs(): number;
  /** A permit for one call, or `undefined` when the breaker refuses it. */
  tryAcquire(): CircuitPermit | undefined;
  /** Calls `listener` on every state change; returns its disposer. */
  onStateChange(listener: (change: CircuitStateChange) => void): Dispose;
}

/** Defaults of {@link createCircuitBreaker}. */
export const CIRCUIT_BREAKER_DEFAULTS = Object.freeze({
  consecutiveFailures: 5,
  minimumCalls: 10,
  windowMs: 10_000,
  openMs: 30_000,
});

interface TripRule {
  /** Records an outcome in the closed state; true when the breaker must open. */
  record(failed: boolean, now: number): boolean;
  reset(): void;
}

const FAILURES = 0;
const CALLS = 1;

function tripRule(trip: CircuitTrip): TripRule {
  if ('consecutiveFailures' in trip && !('failureRatio' in trip)) {
    const limit = requireNumber('breaker.trip.consecutiveFailures', trip.consecutiveFailures, {
      min: 1,
      integer: true,
    });
    let run = 0;
    return {
      record(failed) {
        run = failed ? run + 1 : 0;
        return run >= limit;
      },
      reset() {
        run = 0;
      },
    };
  }
  if ('failureRatio' in trip && !('consecutiveFailures' in trip)) {
    const ratio = requireNumber('breaker.trip.failureRatio', trip.failureRatio, {
      min: 0,
      minExclusive: true,
      max: 1,
    });
    const minimumCalls = requireNumber(
      'breaker.trip.minimumCalls',
      trip.minimumCalls ?? CIRCUIT_BREAKER_DEFAULTS.minimumCalls,
      { min: 1, integer: true },
    );
    const windowMs = requireNumber(
      'breaker.trip.windowMs',
      trip.windowMs ?? CIRCUIT_BREAKER_DEFAULTS.windowMs,
      { min: 10 },
    );
    const counter = createSlidingCounter(windowMs, 2);
    return {
      record(failed, now) {
        counter.add(CALLS, now);
        if (failed) counter.add(FAILURES, now);
        const calls = counter.total(CALLS, now);
        return calls >= minimumCalls && counter.total(FAILURES, now) >= ratio * calls;
      },
      reset() {
        counter.reset();
      },
    };
  }
  throw new ConfigurationError(
    'breaker.trip must have exactly one of consecutiveFailures or failureRatio',
    { option: 'breaker.trip' },
  );
}

const BREAKER_KEYS = optionKeys<CircuitBreakerOptions>()(['trip', 'openMs', 'clock']);
const CONSECUTIVE_KEYS = optionKeys<ConsecutiveFailuresTrip>()(['consecutiveFailures']);
const RATIO_KEYS = optionKeys<FailureRatioTrip>()(['failureRatio', 'minimumCalls', 'windowMs']);

/** Refuses keys {@link CircuitBreakerOptions} (and its `trip`) do not declare. @internal */
export function rejectUnknownBreakerOptions(value: unknown, context: string, path = ''): void {
  rejectUnknownOptions(value, BREAKER_KEYS, context, path);
  const trip: unknown = (value as CircuitBreakerOptions | undefined)?.trip;
  if (typeof trip !== 'object' || trip === null) return;
  // The trip's kind decides its keys. With neither kind's key (or both, which tripRule
  // refuses) any trip key may be meant.
  const counts = 'consecutiveFailures' in trip;
  const ratio = 'failureRatio' in trip;
  const known =
    counts === ratio
      ? [...CONSECUTIVE_KEYS, ...RATIO_KEYS]
      : counts
        ? CONSECUTIVE_KEYS
        : RATIO_KEYS;
  rejectUnknownOptions(trip, known, context, path === '' ? 'trip' : `${path}.trip`);
}

/** Creates a closed {@link CircuitBreaker}. Throws {@link ConfigurationError} on bad options. */
export function createCircuitBreaker(options: CircuitBreakerOptions = {}): CircuitBreaker {
  rejectUnknownBreakerOptions(options, 'createCircuitBreaker');
  const rule = tripRule(
    options.trip ?? { consecutiveFailures: CIRCUIT_BREAKER_DEFAULTS.consecutiveFailures },
  );
  const openMs = requireNumber(
    'breaker.openMs',
    options.openMs ?? CIRCUIT_BREAKER_DEFAULTS.openMs,
    {
      min: 1,
    },
  );
  const clock = options.clock ?? systemClock;
  const listeners = createListenerSet<CircuitStateChange>();

  let state: CircuitState = 'closed';
  /** Bumped on every state change and every new probe: stale permits compare against it. */
  let generation = 0;
  let openedAt = 0;
  let probeOut = false;
  let probeAt = 0;

  const moveTo = (to: CircuitState): void => {
    const from = state;
    const now = clock.now();
    state = to;
    generation++;
    probeOut = false;
    if (to === 'open') openedAt = now;
    if (to === 'closed') rule.reset();
    listeners.emit({ from, to, at: now });
  };

  const permit = (probe: boolean): CircuitPermit => {
    const issued = generation;
    let done = false;
    const settle = (outcome: 'success' | 'failure' | 'release'): void => {
      if (done) return;
      done = true;
      if (issued !== generation) return;
      if (probe) {
        if (outcome === 'success') moveTo('closed');
        else if (outcome === 'failure') moveTo('open');
        else probeOut = false;
        return;
      }
      if (outcome === 'release') return;
      if (rule.record(outcome === 'failure', clock.now())) moveTo('open');
    };
    return {
      success: () => settle('success'),
      failure: () => settle('failure'),
      release: () => settle('release'),
    };
  };

  const takeProbe = (): CircuitPermit => {
    generation++;
    probeOut = true;
    probeAt = clock.now();
    return permit(true);
  };

  return {
    get state() {
      return state;
    },
    retryAfterMs() {
      return state === 'open' ? Math.max(0, openedAt + openMs - clock.now()) : 0;
    },
    tryAcquire() {
      const now = clock.now();
      switch (state) {
        case 'closed':
          return permit(false);
        case 'open':
          if (now - openedAt < openMs) return undefined;
          moveTo('half-open');
          return takeProbe();
        case 'half-open':
          // A probe that never reported (its caller died) must not wedge the breaker forever.
          if (probeOut && now - probeAt < openMs) return undefined;
          return takeProbe();
      }
    },
    onStateChange: listeners.add,
  };
}

/** True when `value` looks like a {@link CircuitBreaker} (as opposed to its options). */
export function isCircuitBreaker(value: unknown): value is CircuitBreaker {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as CircuitBreaker).tryAcquire === 'function' &&
    typeof (value as CircuitBreaker).onStateChange === 'function'
  );
}
