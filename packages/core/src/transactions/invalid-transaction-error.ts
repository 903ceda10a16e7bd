import { JustonceError } from '../errors/justonce-error';

/** Why a transaction object was refused. */
export type InvalidTransactionReason =
  /** Not a transaction object of the adapter's library. */
  | 'not-a-transaction'
  /** The library's connection or handle, but no transaction is open on it. */
  | 'not-in-transaction'
  /** The transaction has already committed or rolled back. */
  | 'finished'
  /** A statement failed in the transaction: nothing more can be written in it. */
  | 'failed';

/**
 * A transaction object that justonce cannot write into, refused before any SQL runs
 * (`NOT_A_TRANSACTION`). A caller's bug: never retriable.
 */
export class InvalidTransactionError extends JustonceError {
  readonly reason: InvalidTransactionReason;

  constructor(library: string, reason: InvalidTransactionReason, message: string) {
    super('NOT_A_TRANSACTION', `${library}: ${message}`, {
      retriable: false,
      details: { library, reason },
    });
    this.reason = reason;
  }
}
