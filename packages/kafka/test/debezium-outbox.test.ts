/**
 * Debezium's PostgreSQL connector with the outbox event router, in a real distributed Kafka
 * Connect worker, relays justonce's outbox to Kafka with the configuration
 * `debeziumOutboxConnector` produces, and a justonce Kafka consumer handles every event exactly
 * once, in commit order per key. In the middle the worker is SIGKILLed and started again (it
 * resumes from its committed offset and may send records twice: the inbox drops them), and
 * PostgreSQL is restarted (the connector connects again). Events of rolled-back transactions
 * never arrive. Afterwards the same events published by justonce's own polling relay are
 * compared with Debezium's records: the same key, value bytes and headers.
 *
 * Everything that is killed or restarted is private to this file: a PostgreSQL cluster with
 * `wal_level=logical` and a Connect worker in a cluster of its own. Kafka is the shared broker.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  createInbox,
  createOutbox,
  createRelay,
  createStore,
  debeziumOutboxConnector,
  debeziumOutboxSchema,
  type EventCause,
  type OutboxEvent,
  type Store,
} from '@justonce/core';
import type { Kafka, KafkaMessage } from 'kafkajs';
import { startPrivateConnect, type PrivateConnect } from '../../../services/private';
import {
  LOGICAL_SETTINGS,
  privatePostgresUnavailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../../../test-support/private-postgres';
import { waitFor } from '../../../test-support/wait-for';
import { openTestStore } from '../../core/test/db';
import { createKafkaConsumer, createKafkaPublisher, type KafkaConsumer } from '../src';
import {
  FAST_GROUP,
  connectKafkaClients,
  createTopics,
  kafkaBrokers,
  unique,
  type KafkaClients,
} from './support';

// A machine without PostgreSQL's binaries fails here, saying why: a skipped test proves nothing.
const unavailable = privatePostgresUnavailable();
if (unavailable !== undefined) {
  throw new Error(`a private PostgreSQL cluster cannot be started here: ${unavailable}`);
}

const KEYS = ['order-a', 'order-b', 'order-c', 'order-d'];
/** A header beyond the standard ones, configured to travel. */
const EXTRA_HEADER = 'x-source';

/** One event as the test adds it, and whether its transaction commits. */
interface PlannedEvent {
  readonly event: OutboxEvent;
  readonly cause?: EventCause;
}

/** A raw record: the bytes as Kafka holds them, headers in order, null values kept. */
interface RawRecord {
  readonly partition: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Array<[string, string | null]>;
}

function rawOf(message: KafkaMessage, partition: number): RawRecord {
  const headers: Array<[string, string | null]> = [];
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    headers.push([name, last === undefined || last === null ? null : String(last)]);
  }
  return { partition, key: message.key ?? null, value: message.value ?? null, headers };
}

/**
 * The events of one business transaction `tx` of a batch: keyed and keyless, JSON and text
 * payloads, some with a cause (causation, correlation, trace context, tenant).
 */
function transactionEvents(topic: string, batch: string, tx: number): PlannedEvent[] {
  const key = tx % 5 === 4 ? null : KEYS[tx % KEYS.length]!;
  const events: OutboxEvent[] = [
    {
      destination: topic,
      key,
      messageId: `${batch}-${tx}-0`,
      payload: { batch, tx, item: 0 },
      headers: { type: 'order.placed', [EXTRA_HEADER]: 'shop' },
    },
    {
      destination: topic,
      key,
      messageId: `${batch}-${tx}-1`,
      payload: `plain text ${batch}/${tx} ✓`,
    },
  ];
  if (tx % 3 === 0) {
    const cause: EventCause = {
      consumer: 'checkout',
      messageId: `in-${batch}-${tx}`,
      correlationId: `flow-${tx}`,
      // Deterministic, so that both stores get the same events.
      traceparent: `00-${createHash('md5').update(`${batch}-${tx}`).digest('hex')}-${'ab'.repeat(8)}-01`,
      tracestate: 'vendor=1',
      scope: 'tenant-7',
    };
    // Caused events get ids derived from the cause: the same in both stores.
    return [
      {
        event: { destination: topic, key, payload: { caused: tx }, headers: { type: 'x' } },
        cause,
      },
      ...events.map((event) => ({ event })),
    ];
  }
  return events.map((event) => ({ event }));
}

/** Adds a batch of transactions; every fourth one rolls back. Resolves to the committed ids. */
async function addBatch(
  store: Store,
  topic: string,
  batch: string,
  count: number,
): Promise<{ committed: string[]; rolledBack: string[] }> {
  const outbox = createOutbox({ store });
  const committed: string[] = [];
  const rolledBack: string[] = [];
  for (let tx = 0; tx < count; tx++) {
    const planned = transactionEvents(topic, batch, tx);
    const rollback = tx % 4 === 3;
    const ids: string[] = [];
    await store.knex
      .transaction(async (trx) => {
        await trx.raw(`insert into ${store.names.schema}.orders (id) values (?)`, [
          `${batch}-${tx}`,
        ]);
        for (const { event, cause } of planned) {
          ids.push(...(await outbox.add(trx, event, cause ? { cause } : {})));
        }
        if (rollback) throw new Error('the business transaction fails');
      })
      .catch((error: Error) => {
        if (!rollback) throw error;
      });
    (rollback ? rolledBack : committed).push(...ids);
  }
  return { committed, rolledBack };
}

describe('Debezium on Kafka Connect relays the outbox', () => {
  let postgres: PrivatePostgres;
  let connect: PrivateConnect;
  let clients: KafkaClients;
  let source: Store;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    clients = await connectKafkaClients();
    // Logical decoding needs wal_level=logical.
    postgres = await startPrivatePostgres({ settings: LOGICAL_SETTINGS });
    cleanup.push(() => postgres.dispose());
    connect = await startPrivateConnect(kafkaBrokers().join(','));
    cleanup.push(() => connect.dispose());
  }, 180_000);

  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    await clients?.close();
  }, 60_000);

  it('every committed event once, in order per key, through a worker kill and a PostgreSQL restart, as the polling relay publishes it', async () => {
    const topic = unique('dbz-orders');
    const relayTopic = unique('dbz-relay');
    await createTopics(clients.admin, [topic, relayTopic], 3);

    // The outbox, its header columns, trigger and publication, in a schema of its own.
    const schema = `jo_dbz_${randomUUID().slice(0, 8)}`;
    const table = { schema, headers: [EXTRA_HEADER], publication: `${schema}_pub` };
    source = await createStore({ connectionString: postgres.url, schema });
    cleanup.push(() => source.close());
    await source.migrate();
    await source.knex.raw(`create table ${schema}.orders (id text primary key)`);
    for (const statement of debeziumOutboxSchema(table)) await source.knex.raw(statement);

    // The connector, registered through Connect's REST API.
    const slot = `${schema}_slot`;
    const connector = debeziumOutboxConnector({
      ...table,
      databaseUrl: postgres.url,
      name: unique('outbox-connector'),
      slot,
      topicPrefix: unique('dbz'),
    });
    const created = await fetch(`${connect.url}/connectors`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(connector),
    });
    expect(created.status).toBe(201);
    const taskState = async (): Promise<string | undefined> => {
      const response = await fetch(`${connect.url}/connectors/${connector.name}/status`);
      if (!response.ok) return undefined;
      const status = (await response.json()) as {
        tasks?: Array<{ state: string; trace?: string }>;
      };
      const task = status.tasks?.[0];
      if (task?.state === 'FAILED') throw new Error(`the connector's task failed: ${task.trace}`);
      return task?.state;
    };
    const slotActive = async (): Promise<boolean> => {
      const result = await source.knex.raw<{ rows: Array<{ active: boolean }> }>(
        'select active from pg_replication_slots where slot_name = ?',
        [slot],
      );
      return result.rows[0]?.active === true;
    };
    const streaming = async () => (await taskState()) === 'RUNNING' && (await slotActive());
    await waitFor('the connector streaming from its slot', streaming, {
      timeoutMs: 90_000,
      intervalMs: 250,
    });

    // The consumer: its inbox and effects on the shared server, untouched by the restarts.
    const sink = await openTestStore('postgres');
    cleanup.push(() => sink.dispose());
    await sink.knex.raw(
      `create table ${sink.names.schema}.effects (
         seq bigserial primary key, message_id text not null, key text)`,
    );
    const consumer: KafkaConsumer = createKafkaConsumer({
      kafka: clients.kafka,
      groupId: unique('dbz-billing'),
      topics: [topic],
      fromBeginning: true,
      consumerConfig: FAST_GROUP,
      inbox: createInbox({ store: sink, consumer: 'billing' }),
      handler: async (ctx) => {
        await ctx.trx.raw(
          `insert into ${sink.names.schema}.effects (message_id, key) values (?, ?)`,
          [ctx.messageId, ctx.message.key ?? null],
        );
      },
    });
    cleanup.push(() => consumer.stop());
    await consumer.start();
    const handled = async (): Promise<string[]> => {
      const result = await sink.knex.raw<{ rows: Array<{ message_id: string }> }>(
        `select message_id from ${sink.names.schema}.effects order by seq`,
      );
      return result.rows.map((row) => row.message_id);
    };
    const allHandled = (ids: string[]) => async () => {
      const seen = new Set(await handled());
      return ids.every((id) => seen.has(id));
    };

    // 1. Events while everything runs, after logical decoding messages (the log relay's drain
    // writes one): they reach every slot, and the connector must skip them, not fail on them.
    await source.knex.raw(
      `select pg_logical_emit_message(true, 'justonce.relay', 'marker'),
              pg_logical_emit_message(false, 'another', 'note')`,
    );
    const first = await addBatch(source, topic, 'a', 12);
    await waitFor('batch a handled', allHandled(first.committed), { timeoutMs: 60_000 });

    // 2. The worker dies without a word; events are added while it is gone; it comes back.
    await connect.kill();
    const second = await addBatch(source, topic, 'b', 12);
    await connect.start();
    await waitFor('batch b handled after the worker restart', allHandled(second.committed), {
      timeoutMs: 90_000,
      intervalMs: 100,
    });

    // 3. PostgreSQL restarts under the connector; events after it still arrive.
    await postgres.restart({ mode: 'fast' });
    const third = await addBatch(source, topic, 'c', 12);
    await waitFor('batch c handled after the PostgreSQL restart', allHandled(third.committed), {
      timeoutMs: 120_000,
      intervalMs: 100,
    });

    // Exactly once: every committed event's effect once, no rolled-back event at all.
    const committed = [...first.committed, ...second.committed, ...third.committed];
    const rolledBack = [...first.rolledBack, ...second.rolledBack, ...third.rolledBack];
    const effects = await handled();
    expect(effects.length).toBe(committed.length);
    expect(new Set(effects)).toEqual(new Set(committed));
    expect(rolledBack.length).toBeGreaterThan(0);
    expect(effects.filter((id) => rolledBack.includes(id))).toEqual([]);

    // In commit order per key: the key's effects in the outbox's id order.
    const outboxRows = await source.knex.raw<{
      rows: Array<{ message_id: string; partition_key: string | null }>;
    }>(`select message_id, partition_key from ${schema}.outbox order by id`);
    const keyOf = new Map(outboxRows.rows.map((row) => [row.message_id, row.partition_key]));
    for (const key of KEYS) {
      const expected = outboxRows.rows
        .filter((row) => row.partition_key === key)
        .map((row) => row.message_id);
      expect(effects.filter((id) => keyOf.get(id) === key)).toEqual(expected);
    }

    // The same events through justonce's polling relay, from a store of its own, to another
    // topic: the records must match Debezium's byte for byte.
    const relaySource = await openTestStore('postgres');
    cleanup.push(() => relaySource.dispose());
    await relaySource.knex.raw(
      `create table ${relaySource.names.schema}.orders (id text primary key)`,
    );
    for (const batch of ['a', 'b', 'c']) await addBatch(relaySource, relayTopic, batch, 12);
    const publisher = createKafkaPublisher({ kafka: clients.kafka });
    cleanup.push(() => publisher.close());
    const relay = createRelay({ store: relaySource, publisher, pollIntervalMs: 100 });
    cleanup.push(() => relay.stop());
    await relay.start();

    const [fromDebezium, fromRelay] = await Promise.all([
      readById(clients.kafka, topic, committed.length),
      readById(clients.kafka, relayTopic, committed.length),
    ]);
    expect([...fromRelay.keys()].sort()).toEqual([...committed].sort());
    for (const id of committed) {
      const debezium = fromDebezium.get(id)!;
      const polled = fromRelay.get(id)!;
      expect(debezium.key).toEqual(polled.key);
      // Connect's partitioner and kafkajs's agree (murmur2 of the key); keyless ones spread.
      if (polled.key !== null) expect(debezium.partition).toBe(polled.partition);
      expect(debezium.value).toEqual(polled.value);
      // An optional header the event lacks is, from Debezium, a header with a null value
      // (which justonce's consumer reads as absent); the polling relay leaves it out.
      expect(debezium.headers.filter(([, value]) => value !== null)).toEqual(polled.headers);
      expect(polled.headers.every(([, value]) => value !== null)).toBe(true);
    }
  }, 420_000);
});

/** Reads a topic from the start until `count` distinct message ids arrived; the first of each. */
async function readById(
  kafka: Kafka,
  topic: string,
  count: number,
): Promise<Map<string, RawRecord>> {
  const byId = new Map<string, RawRecord>();
  const reader = kafka.consumer({ groupId: unique('dbz-reader'), ...FAST_GROUP });
  await reader.connect();
  try {
    await reader.subscribe({ topics: [topic], fromBeginning: true });
    await reader.run({
      eachMessage: async ({ message, partition }) => {
        const record = rawOf(message, partition);
        const id = record.headers.find(([name]) => name === 'message-id')?.[1];
        if (id && !byId.has(id)) byId.set(id, record);
      },
    });
    await waitFor(`${count} distinct events on ${topic}`, () => byId.size >= count, {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    return byId;
  } finally {
    await reader.disconnect();
  }
}
