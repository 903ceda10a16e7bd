/**
 * The error `outbox.add` threw for a value that is not an open transaction, before the
 * transaction adapters: now {@link InvalidTransactionError}, the same class under its old
 * name (code `NOT_A_TRANSACTION` as before).
 *
 * @deprecated Use {@link InvalidTransactionError}.
 */
export { InvalidTransactionError as NotATransactionError } from '../../transactions/invalid-transaction-error';
