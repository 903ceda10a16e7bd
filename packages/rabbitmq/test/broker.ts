import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { connect, type Channel, type ChannelModel, type GetMessage } from 'amqplib';

const run = promisify(execFile);

/** The broker the global setup resolved. */
export function amqpUrl(): string {
  return process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
}

/** A unique queue/exchange name for one test. */
export function uniqueName(label: string): string {
  return `jo-test-${label}-${randomBytes(4).toString('hex')}`;
}

/** A plain connection and channel for declaring, inspecting and deleting test topology. */
export interface Admin {
  readonly model: ChannelModel;
  readonly channel: Channel;
  /** Messages ready in a queue. */
  depth(queue: string): Promise<number>;
  /** Takes every ready message from a queue (acknowledged). */
  drain(queue: string): Promise<GetMessage[]>;
  /** Deletes queues and exchanges, ignoring ones that do not exist. */
  remove(names: { queues?: readonly string[]; exchanges?: readonly string[] }): Promise<void>;
  close(): Promise<void>;
}

export async function openAdmin(): Promise<Admin> {
  const model = await connect(amqpUrl());
  model.on('error', () => undefined);
  const channel = await model.createChannel();
  return {
    model,
    channel,
    async depth(queue) {
      return (await channel.checkQueue(queue)).messageCount;
    },
    async drain(queue) {
      const out: GetMessage[] = [];
      for (;;) {
        const message = await channel.get(queue, { noAck: true });
        if (message === false) return out;
        out.push(message);
      }
    },
    async remove({ queues = [], exchanges = [] }) {
      for (const q of queues) await channel.deleteQueue(q);
      for (const x of exchanges) await channel.deleteExchange(x);
    },
    async close() {
      await channel.close().catch(() => undefined);
      await model.close().catch(() => undefined);
    },
  };
}

/**
 * Closes, with the broker's own management tool, every connection whose client-provided
 * `connection_name` is `name`. Resolves to how many it closed.
 */
export async function closeConnectionsNamed(
  name: string,
  reason = 'closed by test',
): Promise<number> {
  const { stdout } = await run('rabbitmqctl', [
    'list_connections',
    'pid',
    'client_properties',
    '--quiet',
    '--no-table-headers',
  ]);
  const marker = `{"connection_name","${name}"}`;
  const pids = stdout
    .split('\n')
    .filter((line) => line.includes(marker))
    .map((line) => line.split('\t')[0]!);
  for (const pid of pids) await run('rabbitmqctl', ['close_connection', pid, reason]);
  return pids.length;
}
