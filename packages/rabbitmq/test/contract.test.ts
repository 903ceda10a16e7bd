import { checkPublisherContract } from '@justonce/core/testing';
import { createRabbitPublisher } from '../src';
import { amqpUrl, openAdmin, uniqueName, type Admin } from './broker';

/** An AMQP header value as text (amqplib may hand long strings over as bytes). */
function text(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

describe('the RabbitMQ publisher (real broker)', () => {
  let admin: Admin;
  const queues: string[] = [];

  beforeAll(async () => {
    admin = await openAdmin();
  });
  afterAll(async () => {
    await admin.remove({ queues });
    await admin.close();
  });

  it('keeps the publisher contract the relay relies on', async () => {
    const queue = uniqueName('contract');
    await admin.channel.assertQueue(queue, { durable: false });
    queues.push(queue);
    const checks = await checkPublisherContract({
      publisher: createRabbitPublisher({ url: amqpUrl() }),
      destination: queue,
      // Neither an exchange nor a queue: refused before anything is sent.
      invalidDestination: '/',
      // Confirmed publishing: everything is in the queue when the calls have resolved.
      receive: async (destination, count) =>
        (await admin.drain(destination)).slice(0, count).map((m) => {
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(m.properties.headers ?? {})) {
            headers[name] = text(value);
          }
          return {
            messageId: text(m.properties.messageId),
            key: headers['partition-key'] ?? null,
            headers,
            payload: new Uint8Array(m.content),
          };
        }),
    });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks).toHaveLength(6);
  });
});
