import { metrics, type Meter } from '@opentelemetry/api';

/** The name justonce registers its OpenTelemetry meter under. */
export const METER_NAME = '@justonce/core';

/**
 * The meter justonce records to: the one given, else the global provider's (a no-op until
 * the application installs an OpenTelemetry SDK).
 */
export function resolveMeter(meter?: Meter): Meter {
  return meter ?? metrics.getMeter(METER_NAME);
}
