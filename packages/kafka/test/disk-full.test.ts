/**
 * The disk under the database fills up and stays full for longer than `maxAttempts`
 * redeliveries take. A private cluster keeps its `justonce` database on a small tmpfs (the WAL
 * stays on the main disk, so the server reports `53100` instead of crashing); a filler file
 * takes every free byte, then is removed. A Kafka consumer with an inbox (`maxAttempts: 3`)
 * whose handler writes 100 KB rows, and a relay, run throughout. Afterwards every message was
 * handled exactly once, none dead-lettered, no committed offset ever ran ahead of an effect,
 * the outbox adds made before and after the outage were published and none is dead.
 */
import { createOutbox, createStore } from '@justonce/core';
import { randomBytes } from 'node:crypto';

import {
  privatePostgresUnavailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../../../test-support/private-postgres';
import { waitFor } from '../../../test-support/wait-for';
import {
  connectKafkaClients,
  createTopics,
  produce,
  countOf,
  countingLogger,
  sleep,
  unique,
  type KafkaClients,
  faultConsumer,
  faultRelay,
} from './support';

const MAX_ATTEMPTS = 3;
const FULL_FOR_MS = 12_000;
const BEFORE = 10; // messages handled before the disk fills
const DURING = 20; // messages produced while it is full
const ROW_BYTES = 100_000;
const RECOVERY_BOUND_MS = 35_000; // the consumer's infrastructure backoff is capped at 30 s

// A machine without PostgreSQL's binaries (or not root) fails here, saying why: a skipped
// restart test would prove nothing.
const unavailable = privatePostgresUnavailable();
if (unavailable !== undefined) {
  throw new Error(`a private PostgreSQL cluster cannot be started here: ${unavailable}`);
}

describe('disk full for longer than maxAttempts redeliveries (private cluster, Kafka)', () => {
  let pg: PrivatePostgres | undefined;
  let clients: KafkaClients | undefined;
  const cleanup: Array<() => Promise<unknown>> = [];

  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    await clients?.close();
    await pg?.dispose();
  });

  it('handles every message once after the disk is freed; nothing dead, no early commit', async () => {
    pg = await startPrivatePostgres({ sizeMb: 64 });
    const disk = pg.disk!;
    clients = await connectKafkaClients();
    const { kafka, admin, producer } = clients;
    const store = await createStore({ connectionString: pg.url, schema: 'jo' });
    cleanup.push(() => store.close());
    await store.migrate();
    const effects = `${store.names.schema}."effects"`;
    const outboxTable = store.names.table('outbox');
    await store.knex.raw(
      `create table ${effects} (seq bigserial primary key, message_id text not null, body text)`,
    );
    // Stored as is: random hex would barely compress anyway, this makes the size certain.
    await store.knex.raw(`alter table ${effects} alter column body set storage external`);

    const topic = unique('disk-full');
    const eventsTopic = unique('disk-full-events');
    const groupId = unique('disk-full-group');
    await createTopics(admin, [topic, eventsTopic], 1);

    const relayLog = countingLogger();
    const { relay, publisher } = faultRelay(store, kafka, relayLog.logger, 20);
    cleanup.push(() => publisher.close());
    cleanup.push(() => relay.stop());

    const inboxLog = countingLogger();
    const consumerLog = countingLogger();
    const { consumer, tally } = faultConsumer({
      kafka,
      store,
      topic,
      groupId,
      consumer: 'disk-full',
      maxAttempts: MAX_ATTEMPTS,
      batchSize: 5,
      logger: consumerLog.logger,
      inboxLogger: inboxLog.logger,
      insert: `insert into ${effects} (message_id, body) values (?, ?)`,
      row: () => randomBytes(ROW_BYTES / 2).toString('hex'),
    });
    const { processedAt } = tally;
    cleanup.push(() => consumer.stop());
    await relay.start();
    await consumer.start();

    // Watches the group's committed offset: every record below it must have its effect.
    const earlyCommits: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] }).catch(() => []);
        const committed = Number(offsets?.partitions[0]?.offset ?? -1);
        if (committed > 0) {
          const ids = Array.from({ length: committed }, (_, i) => `m-${i}`);
          const have = await countOf(
            store,
            `select count(distinct message_id) as n from ${effects} where message_id = any(?)`,
            [ids],
          ).catch(() => committed);
          if (have < committed) earlyCommits.push(`offset ${committed} committed, ${have} effects`);
        }
        await sleep(100);
      }
    })();
    cleanup.push(async () => {
      watching = false;
      await watcher;
    });

    const outbox = createOutbox({ store });
    const addEvent = (n: number): Promise<string[]> =>
      store.knex.transaction((trx) =>
        outbox.add(trx, { destination: eventsTopic, messageId: `ev-${n}`, payload: { n } }),
      );
    const send = (from: number, to: number): Promise<void> =>
      produce(
        producer,
        topic,
        Array.from({ length: to - from }, (_, k) => ({
          key: `k${from + k}`,
          value: JSON.stringify({ n: from + k }),
          headers: { 'message-id': `m-${from + k}` },
        })),
      );
    const handled = (): Promise<number> =>
      countOf(store, `select count(distinct message_id) as n from ${effects}`);
    const published = (): Promise<number> =>
      countOf(store, `select count(*) as n from ${outboxTable} where status = 'published'`);

    // Before: messages handled and events published normally.
    await send(0, BEFORE);
    for (let n = 0; n < 10; n++) await addEvent(n);
    await waitFor('the first messages', async () => (await handled()) >= BEFORE, {
      timeoutMs: 20_000,
    });
    await waitFor('the first events', async () => (await published()) >= 10, {
      timeoutMs: 20_000,
    });

    // Full: the filler takes every free byte; messages keep coming and cannot be stored.
    await disk.fill();
    const filledAt = Date.now();
    await send(BEFORE, BEFORE + DURING);
    // Small outbox rows may still fit in pages the table has; rows needing a new page fail.
    let refusedAdds = 0;
    let acceptedAdds = 0;
    const refusedCodes = new Set<string>();
    while (Date.now() - filledAt < FULL_FOR_MS) {
      await addEvent(1000 + refusedAdds + acceptedAdds).then(
        () => acceptedAdds++,
        (error: { code?: string }) => {
          refusedAdds++;
          refusedCodes.add(String(error.code));
        },
      );
      await sleep(100);
    }
    const failuresWhileFull =
      (consumerLog.counts.get('kafka inbox batch failed; the records will be retried') ?? 0) +
      (consumerLog.counts.get('kafka inbox call failed; the record will be retried') ?? 0);
    const handledWhileFull = (await handled()) - BEFORE;

    // Freed: everything goes through.
    await disk.free();
    const freedAt = Date.now();
    for (let n = 10; n < 20; n++) await addEvent(n);
    await waitFor('every message to be handled', async () => (await handled()) >= BEFORE + DURING, {
      timeoutMs: RECOVERY_BOUND_MS + 5_000,
      intervalMs: 100,
    });
    const allHandledAt = Date.now();
    await waitFor(
      'every event to be published',
      async () => (await published()) >= 20 + acceptedAdds,
      {
        timeoutMs: 15_000,
      },
    );
    await waitFor(
      'the offset after the last message to be committed',
      async () => {
        const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
        return Number(offsets?.partitions[0]?.offset) === BEFORE + DURING;
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );

    const doubled = await countOf(
      store,
      `select count(*) as n from (select 1 from ${effects} group by message_id having count(*) > 1) d`,
    );
    const dead = await countOf(
      store,
      `select count(*) as n from ${outboxTable} where status = 'dead'`,
    );
    const pending = await countOf(
      store,
      `select count(*) as n from ${outboxTable} where status <> 'published'`,
    );
    const deadLetters = await countOf(
      store,
      `select count(*) as n from ${store.names.table('dead_letters')}`,
    );
    const firstAfter = processedAt.find((t) => t >= freedAt);
    const figures = {
      test: 'disk-full',
      messages: BEFORE + DURING,
      lost: BEFORE + DURING - (await handled()),
      doubled,
      deadLetters: deadLetters + tally.deadLettered,
      outboxDead: dead,
      outboxPending: pending,
      earlyCommits: earlyCommits.length,
      fullForMs: freedAt - filledAt,
      handledWhileFull,
      inboxFailuresWhileFull: failuresWhileFull,
      storeUnavailableWarnings: [...inboxLog.counts].filter(([m]) => /store/i.test(m)),
      refusedOutboxAdds: refusedAdds,
      acceptedOutboxAddsWhileFull: acceptedAdds,
      refusedCodes: [...refusedCodes],
      firstCommitAfterFreeMs: firstAfter === undefined ? null : firstAfter - freedAt,
      allHandledAfterFreeMs: allHandledAt - freedAt,
      relayLog: [...relayLog.counts],
      relayErrors: [...new Set(relayLog.errors)].slice(0, 3),
      eventsAdded: 20 + acceptedAdds,
      eventsOnWire: (await admin.fetchTopicOffsets(eventsTopic)).reduce(
        (sum, p) => sum + Number(p.high),
        0,
      ),
      sampleErrors: [...new Set(consumerLog.errors)].slice(0, 3),
    };
    console.log(JSON.stringify(figures));

    expect(handledWhileFull).toBe(0);
    // The outage outlasted maxAttempts deliveries of the same records.
    expect(failuresWhileFull).toBeGreaterThan(MAX_ATTEMPTS);
    expect(refusedAdds).toBeGreaterThan(0);
    expect(refusedCodes).toEqual(new Set(['53100']));
    expect({
      lost: figures.lost,
      doubled,
      dead,
      deadLetters,
      deadLettered: tally.deadLettered,
      earlyCommits,
    }).toEqual({
      lost: 0,
      doubled: 0,
      dead: 0,
      deadLetters: 0,
      deadLettered: 0,
      earlyCommits: [],
    });
    expect(figures.allHandledAfterFreeMs).toBeLessThan(RECOVERY_BOUND_MS);
  }, 90_000);
});
