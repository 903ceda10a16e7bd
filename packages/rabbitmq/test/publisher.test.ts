import { hasErrorCode, type OutgoingMessage, type Publisher } from '@justonce/core';
import { createRabbitPublisher } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { amqpUrl, closeConnectionsNamed, openAdmin, uniqueName, type Admin } from './broker';

function outgoing(
  destination: string,
  n: number,
  extra: Partial<OutgoingMessage> = {},
): OutgoingMessage {
  return {
    messageId: `m-${n}`,
    destination,
    key: null,
    headers: {},
    payload: Buffer.from(JSON.stringify({ n })),
    ...extra,
  };
}

describe('createRabbitPublisher on a real broker', () => {
  let admin: Admin;
  let publisher: Publisher | undefined;
  const queues: string[] = [];
  const exchanges: string[] = [];

  beforeAll(async () => {
    admin = await openAdmin();
  });
  afterEach(async () => {
    await publisher?.close();
    publisher = undefined;
    await admin.remove({ queues: queues.splice(0), exchanges: exchanges.splice(0) });
  });
  afterAll(async () => {
    await admin.close();
  });

  async function queue(label: string, args: Record<string, unknown> = {}): Promise<string> {
    const name = uniqueName(label);
    await admin.channel.assertQueue(name, { durable: false, arguments: args });
    queues.push(name);
    return name;
  }

  it('publishes a batch larger than the write buffer in full and in order, every message confirmed', async () => {
    const q = await queue('big');
    publisher = createRabbitPublisher({ url: amqpUrl() });
    // 40 × 256 KiB: ten times what one call may leave in amqplib's buffer before it waits.
    const body = 'x'.repeat(256 * 1024);
    const messages = Array.from({ length: 40 }, (_, n) =>
      outgoing(q, n, { key: 'big', payload: Buffer.from(JSON.stringify({ n, body })) }),
    );
    const results = await publisher.publish(messages);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(await admin.depth(q)).toBe(40);
    const delivered = await admin.drain(q);
    expect(delivered.map((m) => (JSON.parse(m.content.toString()) as { n: number }).n)).toEqual(
      Array.from({ length: 40 }, (_, n) => n),
    );
  });

  it('publishes to a queue and to exchange/routingKey, with id, correlation id and headers as AMQP properties, confirmed before it resolves', async () => {
    const q = await queue('pub');
    const exchange = uniqueName('ex');
    exchanges.push(exchange);
    await admin.channel.assertExchange(exchange, 'topic', { durable: false });
    await admin.channel.bindQueue(q, exchange, 'order.*');
    publisher = createRabbitPublisher({ url: amqpUrl() });

    const results = await publisher.publish([
      outgoing(q, 1, {
        key: 'k1',
        headers: { 'correlation-id': 'corr-1', tenant: 'acme', 'content-type': 'application/json' },
      }),
      outgoing(`${exchange}/order.created`, 2),
    ]);

    expect(results).toEqual([
      { messageId: 'm-1', ok: true },
      { messageId: 'm-2', ok: true },
    ]);
    // Confirmed means enqueued: both are in the queue the moment publish resolves.
    expect(await admin.depth(q)).toBe(2);
    const [first, second] = await admin.drain(q);
    expect(first!.properties).toMatchObject({
      messageId: 'm-1',
      correlationId: 'corr-1',
      contentType: 'application/json',
      deliveryMode: 2,
      headers: {
        'message-id': 'm-1',
        'correlation-id': 'corr-1',
        tenant: 'acme',
        'partition-key': 'k1',
      },
    });
    expect(JSON.parse(first!.content.toString())).toEqual({ n: 1 });
    expect(second!.fields).toMatchObject({ exchange, routingKey: 'order.created' });
    expect(second!.properties.messageId).toBe('m-2');
  });

  it('reports an unroutable message as a retriable failure and still publishes the rest', async () => {
    const q = await queue('unroutable');
    const exchange = uniqueName('ex');
    exchanges.push(exchange);
    await admin.channel.assertExchange(exchange, 'direct', { durable: false });
    publisher = createRabbitPublisher({ url: amqpUrl() });

    const results = await publisher.publish([
      outgoing(q, 1),
      outgoing(`${exchange}/nobody-bound`, 2),
      outgoing(q, 3),
    ]);

    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    const failed = results[1]!;
    expect(failed.ok).toBe(false);
    if (failed.ok) return;
    expect(failed.messageId).toBe('m-2');
    expect(hasErrorCode(failed.error, 'RABBIT_UNROUTABLE')).toBe(true);
    expect(failed.retriable).toBe(true);
    expect(await admin.depth(q)).toBe(2);
  });

  it('reports a broker nack as a failure (confirms are awaited, not assumed)', async () => {
    const q = await queue('nack', { 'x-max-length': 1, 'x-overflow': 'reject-publish' });
    publisher = createRabbitPublisher({ url: amqpUrl() });

    const results = await publisher.publish([outgoing(q, 1), outgoing(q, 2)]);

    expect(results[0]).toEqual({ messageId: 'm-1', ok: true });
    expect(results[1]).toMatchObject({ messageId: 'm-2', ok: false, retriable: true });
    expect(hasErrorCode((results[1] as { error: unknown }).error, 'RABBIT_PUBLISH_REJECTED')).toBe(
      true,
    );
  });

  it('fails messages to a missing exchange without losing the channel, and holds back later messages of the same key', async () => {
    const q = await queue('missing-ex');
    publisher = createRabbitPublisher({ url: amqpUrl() });
    const missing = uniqueName('no-such-exchange');

    const results = await publisher.publish([
      outgoing(`${missing}/rk`, 1, { key: 'a' }),
      outgoing(q, 2, { key: 'a' }),
      outgoing(q, 3, { key: 'b' }),
      outgoing('', 4, { key: 'c' }),
    ]);

    expect(results.map((r) => r.ok)).toEqual([false, false, true, false]);
    const [missingExchange, heldBack, , invalid] = results as Array<
      Extract<(typeof results)[number], { ok: false }>
    >;
    expect(hasErrorCode(missingExchange!.error, 'RABBIT_PUBLISH_REJECTED')).toBe(true);
    expect(missingExchange!.error.message).toContain('does not exist');
    expect(heldBack!.error.message).toContain('held back');
    expect(hasErrorCode(invalid!.error, 'RABBIT_INVALID_DESTINATION')).toBe(true);
    expect(invalid!.retriable).toBe(false);
    expect(await admin.depth(q)).toBe(1);
    // The channel survived: the next batch goes through on it.
    expect(await publisher.publish([outgoing(q, 5)])).toEqual([{ messageId: 'm-5', ok: true }]);
  });

  it('reconnects on the next publish after the broker closed its connection', async () => {
    const q = await queue('reconnect');
    const connectionName = uniqueName('publisher-conn');
    publisher = createRabbitPublisher({ url: amqpUrl(), connectionName });
    expect((await publisher.publish([outgoing(q, 1)]))[0]!.ok).toBe(true);

    expect(await closeConnectionsNamed(connectionName)).toBe(1);
    const results = await waitFor('a publish after the reconnection', async () => {
      const [result] = await publisher!.publish([outgoing(q, 2)]);
      return result!.ok ? result : undefined;
    });
    expect(results).toEqual({ messageId: 'm-2', ok: true });
    expect(await admin.depth(q)).toBe(2);
  });

  it('close is idempotent and later publishes fail instead of throwing', async () => {
    const q = await queue('closed');
    publisher = createRabbitPublisher({ url: amqpUrl() });
    await publisher.publish([outgoing(q, 1)]);
    await Promise.all([publisher.close(), publisher.close()]);
    const [result] = await publisher.publish([outgoing(q, 2)]);
    expect(result).toMatchObject({ messageId: 'm-2', ok: false, retriable: true });
    expect(await admin.depth(q)).toBe(1);
  });

  it('validates its configuration at construction', () => {
    expect(() => createRabbitPublisher({})).toThrow(/exactly one of url or connect/);
    expect(() => createRabbitPublisher({ url: 'http://x' })).toThrow(/amqp:\/\//);
    expect(() => createRabbitPublisher({ url: amqpUrl(), confirmTimeoutMs: 0 })).toThrow(
      /confirmTimeoutMs/,
    );
  });
});
