import { JustonceError } from '../../errors/justonce-error';

/**
 * A statement failed inside the handler's transaction and the handler returned normally
 * anyway. PostgreSQL has aborted that transaction, so committing it would silently roll it
 * back: the inbox treats the attempt as failed (retriable) instead of reporting success.
 */
export class AbortedTransactionError extends JustonceError {
  constructor(cause: unknown) {
    super(
      'TRANSACTION_ABORTED',
      "a statement failed in the handler's transaction and the handler did not rethrow; the transaction was rolled back",
      { retriable: true, cause },
    );
  }
}
