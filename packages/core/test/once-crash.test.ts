import { rowsOf, type Handler, type Inbox } from '../src';
import { databaseUrl } from './db';
import { envelope, freshId } from './fixtures/inbox-support';
import { killCrashChildren } from '../../../test-support/crash-child';
import { openEffectsStore, type EffectsStore } from '../../../test-support/effects';
import { checkOnceCrash } from '../../../test-support/once-crash';
import { waitFor } from '../../../test-support/wait-for';

let store: EffectsStore;

beforeAll(async () => {
  store = await openEffectsStore();
});
afterEach(async () => {
  await killCrashChildren();
});
afterAll(async () => {
  await store.dispose();
});

/**
 * Waits until PostgreSQL has ended the killed process's session: before that, the inbox
 * rightly takes a new delivery for a copy delivered while the attempt may still be running.
 */
async function sessionsEnded(messageId: string): Promise<void> {
  const attempts = store.names.table('inbox_attempts');
  await waitFor('the session of the killed process to end', async () => {
    const rows = rowsOf<{ live: boolean }>(
      await store.knex.raw(
        `select exists (select 1 from ${attempts} a join pg_stat_activity s on s.pid = a.open_pid
                         where a.message_id = ?) as live`,
        [messageId],
      ),
    );
    return rows[0]?.live === false;
  });
}

describe('ctx.once when the process is killed with SIGKILL (inbox, no broker)', () => {
  it('between the remote call and its record: called again with the same key, once; after the record: never', async () => {
    const messageId = freshId('once');
    await checkOnceCrash({
      store,
      databaseUrl: databaseUrl(),
      consumer: freshId('c'),
      messageId,
      transport: { kind: 'inbox', messageId, body: 'payload' },
      afterRecord: true,
      afterKill: () => sessionsEnded(messageId),
      finish: async (inbox: Inbox, handler: Handler) => {
        const outcome = await inbox.process(envelope(messageId, 'payload'), handler);
        expect(outcome).toMatchObject({ status: 'processed', attempt: 3 });
        return async () => {};
      },
    });
  });
});
