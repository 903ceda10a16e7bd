import { ConfigurationError } from '../../errors/configuration-error';
import { isJustonceError } from '../../errors/justonce-error';

/** `details.problem` of a {@link RetentionTooShortError}. */
export const RETENTION_TOO_SHORT = 'RETENTION_TOO_SHORT';

/**
 * The retention window is shorter than the transport's redelivery horizon: a message the
 * broker redelivers late would find its dedup record already deleted and run again. Raised
 * at construction. It is a {@link ConfigurationError} (code `INVALID_CONFIG`), so code that
 * handles configuration errors handles it too; `details.problem` is `RETENTION_TOO_SHORT`.
 */
export class RetentionTooShortError extends ConfigurationError {
  /** The retention window that was asked for, in milliseconds. */
  readonly retentionMs: number;
  /** How long the transport may redeliver, in milliseconds. */
  readonly redeliveryHorizonMs: number;

  constructor(retentionMs: number, redeliveryHorizonMs: number, option = 'retentionMs') {
    super(
      `${option} (${retentionMs} ms) is shorter than the redelivery horizon (${redeliveryHorizonMs} ms): a late redelivery would find no dedup record and run again`,
      { problem: RETENTION_TOO_SHORT, [option]: retentionMs, redeliveryHorizonMs },
    );
    this.retentionMs = retentionMs;
    this.redeliveryHorizonMs = redeliveryHorizonMs;
  }
}

/** True when `value` is a {@link RetentionTooShortError} from any copy of the package. */
export function isRetentionTooShortError(value: unknown): value is RetentionTooShortError {
  return (
    isJustonceError(value) &&
    value.code === 'INVALID_CONFIG' &&
    value.details.problem === RETENTION_TOO_SHORT
  );
}
