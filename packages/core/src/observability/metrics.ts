import { metrics, type Meter } from '@opentelemetry/api';
import { ConfigurationError } from '../errors/configuration-error';

/** The name justonce registers its OpenTelemetry meter under. */
export const METER_NAME = '@justonce/core';

/** The instrument factories checked when a caller names none. */
const INSTRUMENT_METHODS: readonly (keyof Meter)[] = [
  'createCounter',
  'createHistogram',
  'createObservableGauge',
];

/**
 * The meter justonce records to: the one given, else the global provider's (a no-op until
 * the application installs an OpenTelemetry SDK). A given meter must have the `methods` its
 * caller uses (default: `createCounter`, `createHistogram`, `createObservableGauge`), else
 * this throws a {@link ConfigurationError} rather than a `TypeError` at the first record.
 */
export function resolveMeter(
  meter?: Meter,
  methods: readonly (keyof Meter)[] = INSTRUMENT_METHODS,
): Meter {
  if (meter === undefined) return metrics.getMeter(METER_NAME);
  const given = meter as Partial<Record<keyof Meter, unknown>> | null;
  const missing =
    typeof given === 'object' && given !== null
      ? methods.filter((m) => typeof given[m] !== 'function')
      : undefined;
  if (missing === undefined || missing.length > 0) {
    throw new ConfigurationError(
      `meter must be an OpenTelemetry Meter (with ${(missing ?? methods).join(', ')})`,
      { meter: typeof meter },
    );
  }
  return meter;
}
