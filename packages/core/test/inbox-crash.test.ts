import { createInbox, rowsOf, type DeliveryFacts, type InboxStep } from '../src';
import { databaseUrl, mysqlUrl, openTestStore } from './db';
import { countRows, envelope, freshId } from './fixtures/inbox-support';
import {
  killCrashChildren,
  spawnCrashChild,
  type CrashJob,
} from '../../../test-support/crash-child';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';
import { waitFor } from '../../../test-support/wait-for';

/** What a test varies in a child's job: the one delivery it processes, and where it stops. */
interface ChildRun {
  readonly messageId: string;
  readonly delivery?: DeliveryFacts;
  readonly maxAttempts?: number;
  /** SIGKILL at this step. */
  readonly stopAt?: InboxStep;
  /** SIGKILL inside the handler, after its business write. */
  readonly killInHandler?: boolean;
  readonly decodeFails?: boolean;
}

// On both layouts of the inbox's records (docs/store.md, "Partitioned layout"), and on MySQL;
// the child processes open a plain store on the schema, which the layout does not concern.
describe.each([
  ['postgres', 'plain'],
  ['postgres', 'partitioned'],
  ['mysql', 'plain'],
] as const)(
  'inbox crash safety on %s, %s layout (child processes killed with SIGKILL)',
  (kind, layout) => {
    let store: Awaited<ReturnType<typeof openTestStore>>;

    beforeAll(async () => {
      store = await openTestStore(kind, { layout });
      await createEffectsTable(store);
    });
    afterAll(async () => {
      await store.dispose();
    });

    afterEach(async () => {
      await killCrashChildren();
    });

    const job = (run: ChildRun): CrashJob => ({
      databaseUrl: kind === 'mysql' ? mysqlUrl() : databaseUrl(),
      schema: store.schema,
      consumer: 'crashy',
      maxAttempts: run.maxAttempts,
      stopAt: run.stopAt,
      stopInHandlerOn: run.killInHandler ? 'payload' : undefined,
      decodeFails: run.decodeFails,
      transport: {
        kind: 'inbox',
        messageId: run.messageId,
        body: 'payload',
        delivery: run.delivery,
      },
    });

    /** Runs a child until it stops where it was told, and kills it there with SIGKILL. */
    async function killedAt(stopAt: InboxStep | undefined, run: Omit<ChildRun, 'stopAt'>) {
      const child = spawnCrashChild(job({ ...run, stopAt }));
      await child.next('stopped');
      expect({ signal: await child.kill(), stderr: child.stderr() }).toEqual({
        signal: 'SIGKILL',
        stderr: '',
      });
      // The redelivery comes once the server has ended the dead process's session, as a
      // broker's would after its ack timeout: before that, the inbox rightly takes it for a
      // copy delivered while the attempt may still be running, and refuses it.
      const attempts = store.names.table('inbox_attempts');
      const sessions =
        kind === 'mysql'
          ? 'information_schema.processlist s on s.id = a.open_pid'
          : 'pg_stat_activity s on s.pid = a.open_pid';
      await waitFor('the session of the killed process to end', async () => {
        const rows = rowsOf<{ live: boolean | number | string }>(
          await store.knex.raw(
            `select exists (select 1 from ${attempts} a join ${sessions}
                             where a.message_id = ?) as live`,
            [run.messageId],
          ),
        );
        return Number(rows[0]?.live) === 0;
      });
    }

    const redeliver = (messageId: string, delivery: DeliveryFacts = {}, maxAttempts?: number) => {
      let ran = false;
      const inbox = createInbox({ store, consumer: 'crashy', maxAttempts });
      return inbox
        .process(envelope(messageId, 'payload', { delivery }), async (ctx) => {
          ran = true;
          await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
        })
        .then((outcome) => ({ outcome, ran }));
    };

    it('killed before commit (at handler-done): nothing commits, the redelivery runs it once', async () => {
      const messageId = freshId('before-commit');
      await killedAt('handler-done', { messageId });
      expect(await countEffects(store, messageId)).toBe(0);
      const { outcome, ran } = await redeliver(messageId);
      expect(ran).toBe(true);
      expect(outcome).toMatchObject({ status: 'processed', attempt: 2 });
      expect(await countEffects(store, messageId)).toBe(1);
    });

    it('killed after commit, before ack (at committed): the redelivery is a duplicate', async () => {
      const messageId = freshId('after-commit');
      await killedAt('committed', { messageId });
      expect(await countEffects(store, messageId)).toBe(1);
      const { outcome, ran } = await redeliver(messageId);
      expect(ran).toBe(false);
      expect(outcome.status).toBe('duplicate');
      expect(await countEffects(store, messageId)).toBe(1);
    });

    it('a message that kills the process every time is dead-lettered after maxAttempts deliveries', async () => {
      const messageId = freshId('poison');
      for (let i = 0; i < 3; i++) {
        await killedAt(undefined, { messageId, killInHandler: true, maxAttempts: 3 });
      }
      expect(await countEffects(store, messageId)).toBe(0);
      const { outcome, ran } = await redeliver(messageId, {}, 3);
      expect(ran).toBe(false);
      expect(outcome).toMatchObject({
        status: 'dead-lettered',
        reason: 'MAX_ATTEMPTS',
        attempt: 4,
      });
      expect(await countEffects(store, messageId)).toBe(0);
    });

    it('the poison is caught even when first deliveries skip the counting write (redelivered flag)', async () => {
      const messageId = freshId('poison-flag');
      const deliveries: DeliveryFacts[] = [
        { redelivered: false },
        { redelivered: true },
        { redelivered: true },
      ];
      for (const delivery of deliveries) {
        await killedAt(undefined, { messageId, delivery, killInHandler: true, maxAttempts: 3 });
      }
      const { outcome, ran } = await redeliver(messageId, { redelivered: true }, 3);
      expect(ran).toBe(false);
      expect(outcome).toMatchObject({
        status: 'dead-lettered',
        reason: 'MAX_ATTEMPTS',
        attempt: 4,
      });
    });

    it('dead-lettering then dying before the ack leaves one dead letter; the redelivery is acknowledged', async () => {
      const messageId = freshId('dead-crash');
      const before = await countRows(store, 'dead_letters');
      await killedAt('committed', { messageId, decodeFails: true });
      const letters = async () =>
        rowsOf<{ reason: string }>(
          await store.knex.raw(
            `select reason from ${store.names.table('dead_letters')} where message_id = ?`,
            [messageId],
          ),
        );
      expect(await letters()).toEqual([{ reason: 'UNDECODABLE_BODY' }]);
      const child = spawnCrashChild(job({ messageId, decodeFails: true }));
      expect(await child.next('outcome')).toEqual({ type: 'outcome', status: 'dead-lettered' });
      expect((await child.exited).code).toBe(0);
      expect(await letters()).toHaveLength(1);
      expect(await countRows(store, 'dead_letters')).toBe(before + 1);
    });
  },
);
