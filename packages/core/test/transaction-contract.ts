/**
 * The transaction contract: what every transaction adapter must make true of the inbox, the
 * outbox and `runInTransaction` when they write into the transactions of the application's
 * own database library. Each adapter's test file (`transaction-contract-<library>.test.ts`)
 * runs it against the real database with {@link describeTransactionContract}; its business
 * writes go through the library's own API (`fixtures/transaction-contract-<library>.ts`).
 *
 * Clauses:
 * - (a) `inbox.process`: the business row, the dedup record and the handler's event commit
 *   together; a duplicate delivery is `duplicate` and writes nothing.
 * - (b) a handler that throws leaves nothing; the message is `failed` and retried.
 * - (c) a handler that swallows its own failed statement is `failed` (TRANSACTION_ABORTED)
 *   with nothing written (on MySQL, where a failed statement undoes itself alone, `processed`
 *   with the rest committed); one recovered in the library's savepoint commits.
 * - (d) `processBatch` of 20 with one poison message: the others commit, the poison alone
 *   is dead-lettered.
 * - (e) `outbox.add(tx, …)` in a transaction the user opened (adapter or library) and in a
 *   handler commits with the business row, and rolls back with it.
 * - (f) `runInTransaction`: row, event and stored response in one commit; the replay is
 *   byte-identical without running; a throwing effect leaves nothing.
 * - (g) 50 concurrent deliveries of one message, and 50 concurrent `runInTransaction` of
 *   one key: one business row.
 * - (h) the library's database object, pool or a committed transaction is refused with
 *   InvalidTransactionError before any SQL.
 * - (i) SIGKILL inside the inbox's transaction (PostgreSQL and MySQL: not PGlite, which a
 *   child process cannot share): nothing half-written, and the redelivery processes the
 *   message once.
 */
import type { ContractFeatures } from './transaction-contract-checks';
import { crashClause } from './transaction-contract-crash';
import { inboxClauses } from './transaction-contract-inbox';
import { operationsClauses } from './transaction-contract-operations';
import { outboxClauses } from './transaction-contract-outbox';
import type { ContractLibrary } from './fixtures/transaction-contract-library';

export type { ContractFeatures, ContractGap } from './transaction-contract-checks';

/**
 * Declares the contract for one library: `setup` opens it (once for the whole describe) with
 * a store on the same database, and its `close` runs after the last clause.
 */
export function describeTransactionContract<Tx>(
  name: string,
  setup: () => Promise<ContractLibrary<Tx>>,
  features: ContractFeatures,
): void {
  describe(`transaction contract: ${name}`, () => {
    let opened: ContractLibrary<Tx> | undefined;
    const lib = (): ContractLibrary<Tx> => {
      if (opened === undefined) throw new Error(`${name} did not open`);
      return opened;
    };
    beforeAll(async () => {
      opened = await setup();
    });
    afterAll(async () => {
      await opened?.close();
    });

    it('enters a transaction as the dialect of its database', async () => {
      const { adapter, store } = lib();
      const expected = store.dialect === 'mysql' ? 'mysql' : 'postgres';
      await lib().nativeTransaction(async (tx) => {
        expect(adapter.enter(tx).dialect).toBe(expected);
      });
    });

    inboxClauses(lib, features);
    outboxClauses(lib, features);
    operationsClauses(lib);
    if (features.sigkill) crashClause(lib);
  });
}
