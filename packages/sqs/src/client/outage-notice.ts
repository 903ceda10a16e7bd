import { errorMessage } from '@justonce/core/transport';
import type { Logger } from '@justonce/core';
import { errorName } from './request-errors';

/**
 * Logs an outage once: a warning at the first failure, debug lines for the ones after it,
 * and one info line (with how long it lasted) at the first success after it, so a long
 * partition shows as two lines, not one per poll. @internal
 */
export class OutageNotice {
  private since: number | undefined;
  private failures = 0;

  constructor(
    private readonly logger: Logger,
    private readonly context: Readonly<Record<string, unknown>>,
  ) {}

  /** Whether the last call failed. */
  get down(): boolean {
    return this.since !== undefined;
  }

  /** Notes a failed call; warns with `message` when it is the first of an outage. */
  failed(message: string, error: unknown, details: Readonly<Record<string, unknown>> = {}): void {
    this.failures += 1;
    const fields = {
      ...this.context,
      ...details,
      error: errorName(error),
      message: errorMessage(error),
    };
    if (this.since === undefined) {
      this.since = Date.now();
      this.logger.warn(message, fields);
    } else {
      this.logger.debug(message, { ...fields, failures: this.failures });
    }
  }

  /** Notes a call that succeeded; logs `message` when it ends an outage. */
  recovered(message: string): void {
    if (this.since === undefined) return;
    this.logger.info(message, {
      ...this.context,
      outageMs: Date.now() - this.since,
      failedCalls: this.failures,
    });
    this.since = undefined;
    this.failures = 0;
  }
}
