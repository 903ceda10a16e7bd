/**
 * PostgreSQL crashes and restarts (`pg_ctl restart -m immediate`) while events are added
 * through the outbox at a steady rate, a relay publishes them to Kafka and a Kafka consumer
 * hands them to an inbox whose store is the same private cluster. Afterwards every event a
 * committed transaction added has been handled exactly once, nothing is dead (outbox) or
 * dead-lettered (inbox), and the relay and consumer committed again soon after the server
 * answered. The measured figures are printed as one JSON line.
 */
import { createOutbox, createStore } from '@justonce/core';

import {
  privatePostgresUnavailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../../../test-support/private-postgres';
import { waitFor } from '../../../test-support/wait-for';
import {
  connectKafkaClients,
  createTopics,
  countOf,
  countingLogger,
  sleep,
  unique,
  type KafkaClients,
  CLIENTS,
  clientUnderTest,
  faultConsumer,
  faultRelay,
} from './support';

const EVENTS = 600;
const EVERY_MS = 16; // ~10 s of adding at 60 events/s
const RESTART_AFTER = 250; // events added before the crash
const RECOVERY_BOUND_MS = 20_000;

// A machine without PostgreSQL's binaries (or not root) fails here, saying why: a skipped
// restart test would prove nothing.
const unavailable = privatePostgresUnavailable();
if (unavailable !== undefined) {
  throw new Error(`a private PostgreSQL cluster cannot be started here: ${unavailable}`);
}

/** Records the first time `probe` succeeds with a value above `floor` once `armed` is set. */
function firstTimeAbove(probe: () => Promise<number>): {
  arm(floor: number): void;
  readonly at: number | undefined;
  stop(): void;
} {
  let floor: number | undefined;
  let at: number | undefined;
  let running = true;
  void (async () => {
    while (running && at === undefined) {
      if (floor !== undefined) {
        const value = await probe().catch(() => -1);
        if (floor !== undefined && value > floor) at = Date.now();
      }
      await sleep(20);
    }
  })();
  return {
    arm: (value) => (floor = value),
    get at() {
      return at;
    },
    stop: () => (running = false),
  };
}

describe.each(CLIENTS)(
  'PostgreSQL crash restart under load (private cluster, Kafka on %s)',
  (client) => {
    let pg: PrivatePostgres | undefined;
    let clients: KafkaClients | undefined;
    const cleanup: Array<() => Promise<unknown>> = [];

    afterAll(async () => {
      for (const step of cleanup.reverse()) await step().catch(() => undefined);
      await clients?.close();
      await pg?.dispose();
    });

    it('loses nothing, doubles nothing, kills nothing, and recovers within the bound', async () => {
      pg = await startPrivatePostgres();
      clients = await connectKafkaClients();
      const { kafka, admin } = clients;
      const store = await createStore({ connectionString: pg.url, schema: 'jo' });
      cleanup.push(() => store.close());
      await store.migrate();
      const effects = `${store.names.schema}."effects"`;
      await store.knex.raw(
        `create table ${effects} (seq bigserial primary key, message_id text not null, n int)`,
      );

      const topic = unique('pg-restart');
      const groupId = unique('pg-restart-group');
      await createTopics(admin, [topic], 3);

      const relayLog = countingLogger();
      const consumerLog = countingLogger();
      const { relay, publisher } = faultRelay(
        store,
        clientUnderTest(client, { kafka }),
        relayLog.logger,
      );
      cleanup.push(() => publisher.close());
      cleanup.push(() => relay.stop());

      const { consumer, tally } = faultConsumer({
        kafka: clientUnderTest(client, { kafka }),
        store,
        topic,
        groupId,
        consumer: 'pg-restart',
        maxAttempts: 3,
        batchSize: 20,
        logger: consumerLog.logger,
        insert: `insert into ${effects} (message_id, n) values (?, ?)`,
        row: (body) => (JSON.parse(Buffer.from(body).toString()) as { n: number }).n,
      });
      const { processedAt } = tally;
      cleanup.push(() => consumer.stop());
      await relay.start();
      await consumer.start();

      const relayCommit = firstTimeAbove(() =>
        countOf(
          store,
          `select count(*) as n from ${store.names.table('outbox')} where status = 'published'`,
        ),
      );
      cleanup.push(async () => relayCommit.stop());

      // The adder retries its own transaction while the server is down; an add whose commit
      // answer was lost may have committed: its id then already exists, and that is success.
      const outbox = createOutbox({ store });
      let addedAfterRestartAt: number | undefined;
      const restart: { doneAt?: number } = {};
      let failedAdds = 0;
      const adder = (async () => {
        for (let n = 0; n < EVENTS; n++) {
          const next = Date.now() + EVERY_MS;
          for (;;) {
            try {
              await store.knex.transaction((trx) =>
                outbox.add(trx, {
                  destination: topic,
                  key: `k${n % 12}`,
                  messageId: `ev-${n}`,
                  payload: { n },
                }),
              );
              break;
            } catch (error) {
              if ((error as { code?: string }).code === 'DUPLICATE_MESSAGE_ID') break;
              failedAdds++;
              await sleep(100);
            }
          }
          if (restart.doneAt !== undefined) addedAfterRestartAt ??= Date.now();
          await sleep(Math.max(0, next - Date.now()));
        }
      })();

      let added = 0;
      await waitFor(
        'events before the crash',
        async () =>
          (added = await countOf(
            store,
            `select count(*) as n from ${store.names.table('outbox')}`,
          )) >= RESTART_AFTER,
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      const beforeRestart = Date.now();
      await pg.restart({ mode: 'immediate' });
      const restartDoneAt = Date.now();
      restart.doneAt = restartDoneAt;
      const processedBefore = processedAt.length;
      const published = `select count(*) as n from ${store.names.table('outbox')} where status = 'published'`;
      const answered = await waitFor(
        'the server to answer',
        () =>
          countOf(store, published).then(
            (n) => ({ n }),
            () => undefined,
          ),
        { timeoutMs: 10_000, intervalMs: 20 },
      );
      relayCommit.arm(answered.n);

      await adder;
      const outboxRows = `${store.names.table('outbox')}`;
      const total = await countOf(store, `select count(*) as n from ${outboxRows}`);
      await waitFor(
        'every committed event to be handled',
        async () =>
          (await countOf(store, `select count(distinct message_id) as n from ${effects}`)) >= total,
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      await waitFor(
        'every event to be published',
        async () =>
          (await countOf(
            store,
            `select count(*) as n from ${outboxRows} where status <> 'published'`,
          )) === 0,
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      relayCommit.stop();

      const lost = await countOf(
        store,
        `select count(*) as n from ${outboxRows} o
        where not exists (select 1 from ${effects} e where e.message_id = o.message_id)`,
      );
      const doubled = await countOf(
        store,
        `select count(*) as n from (select message_id from ${effects} group by message_id having count(*) > 1) d`,
      );
      const dead = await countOf(
        store,
        `select count(*) as n from ${outboxRows} where status = 'dead'`,
      );
      const deadLetters = await countOf(
        store,
        `select count(*) as n from ${store.names.table('dead_letters')}`,
      );
      const consumerFirstCommit = processedAt[processedBefore];
      const figures = {
        test: 'postgres-restart',
        events: total,
        addedBeforeRestart: added,
        failedAddAttempts: failedAdds,
        lost,
        doubled,
        outboxDead: dead,
        deadLetters: deadLetters + tally.deadLettered,
        restartMs: restartDoneAt - beforeRestart,
        consumerRecoveryMs:
          consumerFirstCommit === undefined ? null : consumerFirstCommit - restartDoneAt,
        relayRecoveryMs: relayCommit.at === undefined ? null : relayCommit.at - restartDoneAt,
        adderRecoveryMs:
          addedAfterRestartAt === undefined ? null : addedAfterRestartAt - restartDoneAt,
      };
      const logs = (log: { counts: Map<string, number> }): Array<[string, number]> =>
        [...log.counts].filter(([m]) => !/started/.test(m));
      console.log(
        JSON.stringify({ ...figures, relayLog: logs(relayLog), consumerLog: logs(consumerLog) }),
      );

      expect(total).toBe(EVENTS);
      expect({ lost, doubled, dead, deadLetters, deadLettered: tally.deadLettered }).toEqual({
        lost: 0,
        doubled: 0,
        dead: 0,
        deadLetters: 0,
        deadLettered: 0,
      });
      expect(figures.consumerRecoveryMs).not.toBeNull();
      expect(figures.relayRecoveryMs).not.toBeNull();
      expect(figures.consumerRecoveryMs!).toBeLessThan(RECOVERY_BOUND_MS);
      expect(figures.relayRecoveryMs!).toBeLessThan(RECOVERY_BOUND_MS);
    }, 60_000);
  },
);
