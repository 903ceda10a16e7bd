import { ConfigurationError } from '../errors';
import {
  durationOption,
  optionalFunction,
  optionKeys,
  positiveIntegerOption,
  rejectUnknownOptions,
} from '../config/options';
import { systemClock, type Clock } from '../retry/clock';
import {
  CIRCUIT_BREAKER_DEFAULTS,
  createCircuitBreaker,
  rejectUnknownBreakerOptions,
  type CircuitTrip,
} from '../retry/circuit-breaker';
import { createRetryBudget, RETRY_BUDGET_DEFAULTS } from '../retry/retry-budget';
import type {
  ResilienceBreakerOptions,
  ResilienceBudgetOptions,
  ResilienceEvent,
  ResilienceOptions,
} from './types';

/** Defaults of {@link ResilienceOptions} beyond the retry module's own. */
export const RESILIENCE_DEFAULTS = Object.freeze({
  spentDelayMs: 30_000,
  maxKeys: 1_000,
});

/** {@link ResilienceOptions} checked, defaults applied. @internal */
export interface ResolvedResilience<S> {
  readonly budget:
    | {
        readonly ratio: number;
        readonly minRetriesPerSecond: number;
        readonly windowMs: number;
        readonly spentDelayMs: number;
        readonly whenSpent: 'delay' | 'dead-letter';
      }
    | undefined;
  readonly breaker:
    | {
        readonly trip: CircuitTrip;
        readonly openMs: number;
        readonly key: ((subject: S) => string) | undefined;
        readonly maxKeys: number;
      }
    | undefined;
  readonly onEvent: ((event: ResilienceEvent) => void) | undefined;
  readonly clock: Clock;
}

const KEYS = optionKeys<ResilienceOptions<unknown>>()(['budget', 'breaker', 'onEvent', 'clock']);
const BUDGET_KEYS = optionKeys<ResilienceBudgetOptions>()([
  'ratio',
  'minRetriesPerSecond',
  'windowMs',
  'spentDelayMs',
  'whenSpent',
]);
const BREAKER_KEYS = optionKeys<ResilienceBreakerOptions<unknown>>()([
  'trip',
  'openMs',
  'key',
  'maxKeys',
]);

/** `value` as a nested options object, `undefined` for `false`; anything else is refused. */
function section(value: unknown, name: string): object | undefined {
  if (value === false) return undefined;
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(`${name} must be an options object or false`, {
      [name]: value === null ? 'null' : typeof value,
    });
  }
  return value;
}

function resolveBudget(
  value: unknown,
  context: string,
  path: string,
): ResolvedResilience<unknown>['budget'] {
  const given = section(value, `${path}.budget`) as ResilienceBudgetOptions | undefined;
  if (given === undefined) return undefined;
  rejectUnknownOptions(given, BUDGET_KEYS, context, `${path}.budget`);
  const settings = {
    ratio: given.ratio ?? RETRY_BUDGET_DEFAULTS.ratio,
    minRetriesPerSecond: given.minRetriesPerSecond ?? RETRY_BUDGET_DEFAULTS.minRetriesPerSecond,
    windowMs: given.windowMs ?? RETRY_BUDGET_DEFAULTS.windowMs,
  };
  createRetryBudget(settings); // checks the numbers, naming them
  const spentDelayMs = durationOption(
    given.spentDelayMs,
    `${path}.budget.spentDelayMs`,
    RESILIENCE_DEFAULTS.spentDelayMs,
    0,
  );
  const whenSpent = given.whenSpent ?? 'delay';
  if (whenSpent !== 'delay' && whenSpent !== 'dead-letter') {
    throw new ConfigurationError(
      `${context}: ${path}.budget.whenSpent must be 'delay' or 'dead-letter'`,
      { whenSpent: String(whenSpent) },
    );
  }
  return { ...settings, spentDelayMs, whenSpent };
}

function resolveBreaker<S>(
  value: unknown,
  context: string,
  path: string,
): ResolvedResilience<S>['breaker'] {
  const given = section(value, `${path}.breaker`) as ResilienceBreakerOptions<S> | undefined;
  if (given === undefined) return undefined;
  rejectUnknownOptions(given, BREAKER_KEYS, context, `${path}.breaker`);
  rejectUnknownBreakerOptions({ trip: given.trip }, context, `${path}.breaker`);
  const trip = given.trip ?? { consecutiveFailures: CIRCUIT_BREAKER_DEFAULTS.consecutiveFailures };
  const openMs = given.openMs ?? CIRCUIT_BREAKER_DEFAULTS.openMs;
  createCircuitBreaker({ trip, openMs }); // checks the trip and openMs, naming them
  return {
    trip,
    openMs,
    key: optionalFunction<(subject: S) => string>(given.key, `${path}.breaker.key`),
    maxKeys: positiveIntegerOption(
      given.maxKeys,
      `${path}.breaker.maxKeys`,
      RESILIENCE_DEFAULTS.maxKeys,
    ),
  };
}

/**
 * Checks a `resilience` option as `context` (the factory) gets it, unknown keys refused at
 * every level, and applies the defaults. Throws {@link ConfigurationError}. @internal
 */
export function resolveResilience<S>(
  options: ResilienceOptions<S>,
  context: string,
  path = 'resilience',
): ResolvedResilience<S> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ConfigurationError(`${context}: ${path} must be an options object`, {
      [path]: options === null ? 'null' : typeof options,
    });
  }
  rejectUnknownOptions(options, KEYS, context, path);
  const clock = options.clock ?? systemClock;
  if (typeof clock.now !== 'function' || typeof clock.sleep !== 'function') {
    throw new ConfigurationError(`${path}.clock must be a Clock (now, sleep)`);
  }
  return {
    budget: resolveBudget(options.budget, context, path),
    breaker: resolveBreaker<S>(options.breaker, context, path),
    onEvent: optionalFunction<(event: ResilienceEvent) => void>(options.onEvent, `${path}.onEvent`),
    clock,
  };
}
