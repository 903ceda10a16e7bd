/**
 * Duplicate deliveries, made the way a broker or a producer's retry makes them: messages the
 * relays already published are sent again, with the same `message-id` header, straight to
 * Kafka (`order.created`) and RabbitMQ (`payment.captured`). The consumers' inboxes must
 * recognise every copy and change nothing.
 */
import type { ConfirmChannel } from 'amqplib';
import type { Producer } from 'kafkajs';
import { rowsOf, type Store } from '@justonce/core';

interface PublishedRow {
  message_id: string;
  partition_key: string | null;
  /** A JSON column: an object on PostgreSQL and MySQL, its text on MariaDB. */
  headers: Record<string, unknown> | string;
  payload: Buffer;
}

/** Up to `count` events of `store`'s outbox already published to `destination`, picked at random. */
async function published(
  store: Store,
  destination: string,
  count: number,
  random: () => number,
): Promise<PublishedRow[]> {
  const rows = rowsOf<PublishedRow>(
    await store.knex.raw(
      `select message_id, partition_key, headers, payload from ${store.names.table('outbox')}
        where destination = ? and status = 'published'`,
      [destination],
    ),
  );
  const picked: PublishedRow[] = [];
  while (picked.length < count && rows.length > 0) {
    picked.push(...rows.splice(Math.floor(random() * rows.length), 1));
  }
  return picked;
}

function stringHeaders(row: PublishedRow): Record<string, string> {
  const headers: Record<string, string> = {};
  const stored: unknown = typeof row.headers === 'string' ? JSON.parse(row.headers) : row.headers;
  for (const [name, value] of Object.entries(stored ?? {})) {
    if (typeof value === 'string') headers[name] = value;
  }
  headers['message-id'] = row.message_id;
  return headers;
}

/** Sends up to `count` published `order.created` events to Kafka again; resolves to how many. */
export async function republishToKafka(
  store: Store,
  producer: Producer,
  topic: string,
  count: number,
  random: () => number,
): Promise<number> {
  const rows = await published(store, topic, count, random);
  if (rows.length === 0) return 0;
  await producer.send({
    topic,
    messages: rows.map((row) => ({
      key: row.partition_key,
      value: row.payload,
      headers: stringHeaders(row),
    })),
  });
  return rows.length;
}

/** Sends up to `count` published `payment.captured` events to RabbitMQ again; resolves to how many. */
export async function republishToRabbit(
  store: Store,
  channel: ConfirmChannel,
  queue: string,
  count: number,
  random: () => number,
): Promise<number> {
  const rows = await published(store, queue, count, random);
  for (const row of rows) {
    channel.sendToQueue(queue, row.payload, {
      headers: stringHeaders(row),
      messageId: row.message_id,
      contentType: 'application/json',
      persistent: true,
    });
  }
  await channel.waitForConfirms();
  return rows.length;
}
