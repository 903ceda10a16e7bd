/**
 * What the transaction contract's clauses share: deliveries, the handler every clause starts
 * from, and what a test prefix left behind, counted on both sides: the business rows with
 * the library's own API, the dedup records and outbox events with the store.
 */
import {
  InvalidTransactionError,
  rowsOf,
  type Envelope,
  type HandlerContext,
  type InboxOutcome,
  type Store,
} from '../src';
import { RowAdded, type ContractLibrary } from './fixtures/transaction-contract-library';

/**
 * A clause a library is known to fail, named so that its test is declared `it.failing`: the
 * suite stays green while the gap is open, and turns red once the gap is closed, so the
 * marker is removed with the fix.
 * - `refuse-finished-native`: `enter` refuses a transaction the library opened itself (not
 *   through the adapter) once it has committed.
 */
export type ContractGap = 'refuse-finished-native';

/** What a library can be asked beyond the clauses every one must pass. */
export interface ContractFeatures {
  /** Failed statements can be recovered in a savepoint of the library's own (clause c). */
  readonly savepoints: boolean;
  /** Run the SIGKILL clause (i): a child process can open the library on the same server. */
  readonly sigkill: boolean;
  /**
   * What a failed statement does to its transaction (clause c): PostgreSQL aborts it
   * (`'transaction'`, the default); MySQL undoes the statement alone and goes on
   * (`'statement'`, docs/store.md).
   */
  readonly failedStatementUndoes?: 'transaction' | 'statement';
  /** Clauses the library fails today (see {@link ContractGap}). */
  readonly knownGaps?: readonly ContractGap[];
}

/** The inbox consumer of every clause (each library runs in a schema of its own). */
export const CONSUMER = 'contract';

/** The operation of the `runInTransaction` clauses. */
export const OPERATION = 'contract-op';

/** A delivery of message `id`; `receiveCount` 1 is a first delivery (no attempt counting). */
export function envelope(id: string, receiveCount = 1): Envelope {
  return { id, headers: {}, body: JSON.stringify({ id }), delivery: { receiveCount } };
}

/**
 * The handler of a well-behaved consumer: the business row named after the message, and one
 * event to `destination` through `ctx.outbox`, both in `ctx.trx`.
 */
export function writeRowAndEvent<Tx>(
  lib: ContractLibrary<Tx>,
  destination: string,
): (ctx: HandlerContext<Tx>) => Promise<void> {
  return async ({ trx, messageId, outbox }) => {
    await lib.insertRow(trx, messageId);
    await outbox.add(RowAdded, { id: messageId }, { destination });
  };
}

/** The statuses of the dedup records of `prefix`'s messages, in message id order. */
export async function dedupStatuses(store: Store, prefix: string): Promise<string[]> {
  const startsWith =
    store.dialect === 'mysql'
      ? 'left(message_id, char_length(?)) = ?'
      : 'starts_with(message_id, ?)';
  const found = await store.knex.raw(
    `select status from ${store.names.table('inbox_records')}
      where consumer = ? and ${startsWith} order by message_id`,
    store.dialect === 'mysql' ? [CONSUMER, prefix, prefix] : [CONSUMER, prefix],
  );
  return rowsOf<{ status: string }>(found).map((row) => row.status);
}

/** The message ids of the outbox events to `destination`, in the order they were added. */
export async function eventIds(store: Store, destination: string): Promise<string[]> {
  const found = await store.knex.raw(
    `select message_id from ${store.names.table('outbox')} where destination = ? order by id`,
    [destination],
  );
  return rowsOf<{ message_id: string }>(found).map((row) => row.message_id);
}

/** What a prefix (also its events' destination) left: business rows, dedup records, events. */
export interface Written {
  readonly rows: number;
  readonly records: string[];
  readonly events: number;
}

/** What `prefix` left behind, committed. */
export async function written<Tx>(lib: ContractLibrary<Tx>, prefix: string): Promise<Written> {
  return {
    rows: await lib.countRows(prefix),
    records: await dedupStatuses(lib.store, prefix),
    events: (await eventIds(lib.store, prefix)).length,
  };
}

/** Nothing at all. */
export const NOTHING: Written = { rows: 0, records: [], events: 0 };

/** One message handled once: its row, its SUCCEEDED record, its event. */
export const ONCE: Written = { rows: 1, records: ['SUCCEEDED'], events: 1 };

/** The outcome, which must be `failed`. */
export function failedOutcome<R>(
  outcome: InboxOutcome<R>,
): Extract<InboxOutcome<R>, { status: 'failed' }> {
  if (outcome.status !== 'failed') throw new Error(`expected failed, got ${outcome.status}`);
  return outcome;
}

/** `error` is the adapter's refusal: NOT_A_TRANSACTION, not retriable, naming the library. */
export function expectRefusal(error: unknown, library: string): void {
  expect(error).toBeInstanceOf(InvalidTransactionError);
  expect(error).toMatchObject({
    code: 'NOT_A_TRANSACTION',
    retriable: false,
    details: { library },
  });
}

/** What calling `enter` throws (synchronously: no SQL can have run), or `undefined`. */
export function thrownBy(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** What `promise` rejects with, or `undefined` when it resolves. */
export function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}
