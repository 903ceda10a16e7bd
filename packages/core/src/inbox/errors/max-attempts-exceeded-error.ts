import { JustonceError } from '../../errors/justonce-error';

/**
 * A message was tried `maxAttempts` times without success (failing, or crashing the
 * process); it is dead-lettered. `cause` is the last handler error when one was seen.
 */
export class MaxAttemptsExceededError extends JustonceError {
  constructor(attempts: number, maxAttempts: number, cause?: unknown, lastError?: string) {
    const last = lastError ?? (cause instanceof Error ? cause.message : undefined);
    super(
      'MAX_ATTEMPTS',
      `gave up after ${attempts} attempts (limit ${maxAttempts})${last ? `; last error: ${last}` : ''}`,
      { retriable: false, cause, details: { attempts, maxAttempts } },
    );
  }
}
