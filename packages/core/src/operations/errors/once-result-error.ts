import { JustonceError, hasErrorCode } from '../../errors';
import type { PayloadIssue } from '../../messages/issues';

/** Code of {@link OnceResultError}. */
export const ONCE_RESULT_INVALID = 'ONCE_RESULT_INVALID';

/**
 * The result of a `ctx.once` step, first run or replay, failed the step's `schema`. The
 * record is kept as it is (the effect happened; running it again would repeat it), so every
 * later delivery fails the same way: not retriable, a dead letter for a message.
 */
export class OnceResultError extends JustonceError {
  /** The step whose result failed. */
  readonly step: string;
  /** What the schema found, as plain data (at most 100 issues). */
  readonly issues: readonly PayloadIssue[];

  constructor(step: string, issues: readonly PayloadIssue[]) {
    const first = issues[0];
    super(
      ONCE_RESULT_INVALID,
      `the stored result of step "${step}" fails its schema${first === undefined ? '' : `: ${first.message}`}`,
      { retriable: false, details: { step, issues } },
    );
    this.step = step;
    this.issues = issues;
  }
}

/** True when `value` is an {@link OnceResultError} from any copy of the package. */
export function isOnceResultError(value: unknown): value is OnceResultError {
  return hasErrorCode(value, ONCE_RESULT_INVALID);
}
