/**
 * A network partition between the application and PostgreSQL (every packet to and from the
 * private cluster's port dropped by the kernel's firewall, connections left open) while
 * events are added through the outbox, a relay publishes them to Kafka and a Kafka consumer
 * hands them to an inbox on the same cluster. Each app must say so within its time limit,
 * nothing may go dead, and after the heal everything flows again within seconds: every event
 * a committed transaction added handled exactly once. The figures are printed as one JSON
 * line.
 */
import { createOutbox, createStore, type Logger } from '@justonce/core';

import {
  privatePostgresUnavailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../../../test-support/private-postgres';
import { healAll, partitionOf, partitionUnavailable } from '../../../test-support/partition';
import { waitFor } from '../../../test-support/wait-for';
import {
  connectKafkaClients,
  createTopics,
  countOf,
  produce,
  sleep,
  unique,
  type KafkaClients,
  CLIENTS,
  clientUnderTest,
  faultConsumer,
  faultRelay,
} from './support';

const EVENTS = 400;
const EVERY_MS = 20;
const CUT_AFTER = 150; // events added before the partition
const CUT_MS = 8_000; // longer than every limit below
const DIRECT = 20; // records produced straight to the topic during the cut, so the consumer has work
const TIMEOUTS = { connectMs: 1_000, queryMs: 2_000, statementMs: 1_500, acquireMs: 3_000 };
const LISTEN_CHECK_MS = 1_000;
/** A limit, plus the time to log it on a loaded two-core machine. */
const NOTICE_BOUND_MS = TIMEOUTS.queryMs + 3_000;
const RECOVERY_BOUND_MS = 10_000;

// A machine that cannot start a private cluster or change the firewall fails here, saying
// why: a skipped partition test would prove nothing.
const unavailable = privatePostgresUnavailable();
if (unavailable !== undefined) {
  throw new Error(`a private PostgreSQL cluster cannot be started here: ${unavailable}`);
}

/**
 * The test's own reads go through the store under test, so near the partition one may meet
 * the store's time limits (a connection begun during the cut); they are retried, not failed.
 */
function probe(store: Parameters<typeof countOf>[0], sql: string): Promise<number> {
  return waitFor(
    `the store to answer ${sql}`,
    () =>
      countOf(store, sql).then(
        (n) => ({ n }),
        () => undefined,
      ),
    { timeoutMs: 20_000, intervalMs: 100 },
  ).then(({ n }) => n);
}

/** A logger that remembers when each message was first logged at warn or error. */
function timedLogger(): { logger: Logger; firstAt: Map<string, number> } {
  const firstAt = new Map<string, number>();
  const note = (message: string): void => {
    if (!firstAt.has(message)) firstAt.set(message, Date.now());
  };
  const ignore = (): void => undefined;
  return { logger: { debug: ignore, info: ignore, warn: note, error: note }, firstAt };
}

/** The first time anything was logged at or after `since`, relative to it. */
function noticedAfter(log: { firstAt: Map<string, number> }, since: number): number | null {
  const times = [...log.firstAt.values()].filter((at) => at >= since);
  return times.length === 0 ? null : Math.min(...times) - since;
}

describe.each(CLIENTS)(
  'network partition to PostgreSQL under load (private cluster, Kafka on %s)',
  (client) => {
    let pg: PrivatePostgres | undefined;
    let clients: KafkaClients | undefined;
    const cleanup: Array<() => Promise<unknown>> = [];

    beforeAll(async () => {
      const reason = await partitionUnavailable();
      if (reason !== undefined) throw new Error(`a partition cannot be played here: ${reason}`);
    });

    afterAll(async () => {
      await healAll();
      for (const step of cleanup.reverse()) await step().catch(() => undefined);
      await clients?.close();
      await pg?.dispose();
    });

    it('each app notices within its limit, nothing goes dead, and all flows after the heal', async () => {
      pg = await startPrivatePostgres();
      clients = await connectKafkaClients();
      const { kafka, admin } = clients;
      const store = await createStore({
        connectionString: pg.url,
        schema: 'jo',
        timeouts: { ...TIMEOUTS, listenCheckMs: LISTEN_CHECK_MS },
        keepAlive: { initialDelayMs: 1_000 },
      });
      cleanup.push(() => store.close());
      await store.migrate();
      const effects = `${store.names.schema}."effects"`;
      await store.knex.raw(
        `create table ${effects} (seq bigserial primary key, message_id text not null, n int)`,
      );
      const outboxRows = store.names.table('outbox');

      const topic = unique('pg-partition');
      await createTopics(admin, [topic], 3);
      const relayLog = timedLogger();
      const consumerLog = timedLogger();
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
        groupId: unique('pg-partition-group'),
        consumer: 'pg-partition',
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

      // The adder retries its own transaction while the database is cut off; an add whose
      // commit answer was lost may have committed: its id then exists, and that is success.
      const outbox = createOutbox({ store });
      let failedAdds = 0;
      let addedAfterHealAt: number | undefined;
      const partition = partitionOf(pg.port);
      const heal: { at?: number } = {};
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
          if (heal.at !== undefined) addedAfterHealAt ??= Date.now();
          await sleep(Math.max(0, next - Date.now()));
        }
      })();

      await waitFor(
        'events before the partition',
        async () =>
          (await countOf(store, `select count(*) as n from ${outboxRows}`).catch(() => -1)) >=
          CUT_AFTER,
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      const published = `select count(*) as n from ${outboxRows} where status = 'published'`;
      const cutAt = Date.now();
      await partition.cut();
      // The relay cannot read the outbox now; these reach the consumer anyway, and its inbox
      // calls meet the partition.
      await produce(
        clients.producer,
        topic,
        Array.from({ length: DIRECT }, (_, i) => ({
          key: `d${i % 4}`,
          value: JSON.stringify({ n: EVENTS + i }),
          headers: { 'message-id': `direct-${i}` },
        })),
      );
      await sleep(CUT_MS - (Date.now() - cutAt));
      const relayNoticedMs = noticedAfter(relayLog, cutAt);
      const consumerNoticedMs = noticedAfter(consumerLog, cutAt);
      const processedBeforeHeal = processedAt.length;
      await partition.heal();
      const healedAt = Date.now();
      heal.at = healedAt;
      const publishedAtHeal = await probe(store, published);
      const relayBack = await waitFor(
        'the relay to publish again',
        async () =>
          (await countOf(store, published).catch(() => -1)) > publishedAtHeal
            ? Date.now()
            : undefined,
        { timeoutMs: RECOVERY_BOUND_MS + 5_000, intervalMs: 20 },
      );
      await waitFor(
        'the consumer to handle again',
        async () => processedAt.length > processedBeforeHeal,
        {
          timeoutMs: RECOVERY_BOUND_MS + 5_000,
          intervalMs: 20,
        },
      );
      const consumerBack = processedAt[processedBeforeHeal] as number;

      await adder;
      const total = await probe(store, `select count(*) as n from ${outboxRows}`);
      await waitFor(
        'every committed event and direct record to be handled',
        async () =>
          (await countOf(store, `select count(distinct message_id) as n from ${effects}`).catch(
            () => -1,
          )) >=
          total + DIRECT,
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      const expected = `select message_id from ${outboxRows}
       union all select 'direct-' || i from generate_series(0, ${DIRECT - 1}) i`;
      const lost = await probe(
        store,
        `select count(*) as n from (${expected}) o
        where not exists (select 1 from ${effects} e where e.message_id = o.message_id)`,
      );
      const doubled = await probe(
        store,
        `select count(*) as n from (select message_id from ${effects}
        group by message_id having count(*) > 1) d`,
      );
      const dead = await probe(
        store,
        `select count(*) as n from ${outboxRows} where status = 'dead'`,
      );
      const deadLetters = await probe(
        store,
        `select count(*) as n from ${store.names.table('dead_letters')}`,
      );
      const figures = {
        test: 'postgres-partition',
        events: total,
        directRecords: DIRECT,
        cutMs: CUT_MS,
        failedAddAttempts: failedAdds,
        lost,
        doubled,
        outboxDead: dead,
        deadLetters: deadLetters + tally.deadLettered,
        relayNoticedMs,
        consumerNoticedMs,
        relayRecoveryMs: relayBack - healedAt,
        consumerRecoveryMs: consumerBack - healedAt,
        adderRecoveryMs: addedAfterHealAt === undefined ? null : addedAfterHealAt - healedAt,
        relayLog: [...relayLog.firstAt.keys()],
        consumerLog: [...consumerLog.firstAt.keys()],
      };
      console.log(JSON.stringify(figures));

      expect(total).toBe(EVENTS);
      expect({ lost, doubled, dead, deadLetters, deadLettered: tally.deadLettered }).toEqual({
        lost: 0,
        doubled: 0,
        dead: 0,
        deadLetters: 0,
        deadLettered: 0,
      });
      expect(relayNoticedMs).not.toBeNull();
      expect(consumerNoticedMs).not.toBeNull();
      expect(relayNoticedMs!).toBeLessThan(NOTICE_BOUND_MS);
      expect(consumerNoticedMs!).toBeLessThan(NOTICE_BOUND_MS);
      expect(figures.relayRecoveryMs).toBeLessThan(RECOVERY_BOUND_MS);
      expect(figures.consumerRecoveryMs).toBeLessThan(RECOVERY_BOUND_MS);
    }, 90_000);
  },
);
