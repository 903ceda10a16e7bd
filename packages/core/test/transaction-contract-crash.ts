/**
 * The SIGKILL clause of the transaction contract (i), on PostgreSQL or MySQL: a child process is
 * killed inside the inbox's transaction, opened through the library's adapter, after the
 * business row and the outbox event were written. The server rolls the transaction back with
 * the connection, so nothing of it is ever seen, and the redelivery handles it exactly once.
 */
import { killChildren } from '../../../test-support/child-process';
import { createInbox } from '../src';
import {
  CONSUMER,
  envelope,
  NOTHING,
  ONCE,
  writeRowAndEvent,
  written,
} from './transaction-contract-checks';
import { spawnContractCrashChild } from './fixtures/transaction-contract-child';
import type { ContractLibrary } from './fixtures/transaction-contract-library';

/** Declares the SIGKILL clause for the library `lib()` returns once it is open. */
export function crashClause<Tx>(lib: () => ContractLibrary<Tx>) {
  afterEach(async () => {
    await killChildren();
  });

  it('(i) SIGKILL inside the inbox transaction after the business row and the event: nothing half-written; the redelivery processes it once', async () => {
    const { kind, dialect, schema, store } = lib();
    if (dialect === 'pglite') throw new Error('a child process cannot open the parent’s PGlite');
    const child = spawnContractCrashChild({
      kind,
      dialect,
      schema,
      distribution: store.distribution,
      consumer: CONSUMER,
      messageId: 'i/1',
      rowId: 'i/1',
      destination: 'i/',
    });
    expect(await child.next('in-transaction')).toMatchObject({ attempt: 1 });
    // Written in the child's open transaction, so far invisible to everyone else.
    expect(await written(lib(), 'i/')).toEqual(NOTHING);
    expect({ signal: await child.kill(), stderr: child.stderr() }).toEqual({
      signal: 'SIGKILL',
      stderr: '',
    });
    expect(await written(lib(), 'i/')).toEqual(NOTHING);

    const inbox = createInbox({
      store: lib().store,
      consumer: CONSUMER,
      transactions: lib().adapter,
    });
    const redelivered = await inbox.process(envelope('i/1', 2), writeRowAndEvent(lib(), 'i/'));
    expect(redelivered).toMatchObject({ status: 'processed', attempt: 2 });
    expect(await written(lib(), 'i/')).toEqual(ONCE);
    const again = await inbox.process(envelope('i/1', 3), writeRowAndEvent(lib(), 'i/'));
    expect(again).toMatchObject({ status: 'duplicate' });
    expect(await written(lib(), 'i/')).toEqual(ONCE);
  });
}
