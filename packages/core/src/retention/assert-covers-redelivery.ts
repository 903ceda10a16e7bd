import { RetentionTooShortError } from './errors/retention-too-short-error';

/**
 * Refuses a retention window shorter than a redelivery horizon with
 * {@link RetentionTooShortError}. Does nothing when no horizon is known. Use it wherever a
 * dedup window is configured (the inbox, operations fed by a broker, the retention job).
 */
export function assertRetentionCoversRedelivery(
  retentionMs: number,
  redeliveryHorizonMs: number | undefined,
  option = 'retentionMs',
): void {
  if (redeliveryHorizonMs !== undefined && retentionMs < redeliveryHorizonMs) {
    throw new RetentionTooShortError(retentionMs, redeliveryHorizonMs, option);
  }
}
