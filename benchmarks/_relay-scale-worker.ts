/**
 * One relay process of `pnpm bench relay-scale` (benchmarks/relay-scale.ts forks it). It runs
 * `createRelay` on the bench's outbox, publishing to a publisher that only counts (`memory`)
 * or to Kafka (`kafka`, the built @justonce/kafka publisher), and talks to its parent over the
 * IPC channel:
 *
 * - sends `{ type: 'ready' }` once its publisher is connected, and starts the relay on
 *   `{ type: 'start' }`;
 * - sends `{ type: 'progress', published }` every 50 ms while it runs;
 * - on `{ type: 'stop' }` stops the relay and sends `{ type: 'report', … }`: its CPU time over
 *   the run, each key's sequence numbers with the time each was accepted (for the parent to
 *   check order per key across processes), and the duration of each claim statement.
 *
 * Configured by environment: DATABASE_URL, SCALE_SCHEMA, SCALE_PUBLISHER (memory | kafka),
 * KAFKA_BROKERS, SCALE_BATCH, SCALE_CONCURRENCY. Warnings and errors the relay logs go to
 * stderr.
 */
import { Client } from 'pg';
import {
  createRelay,
  createStore,
  type OutgoingMessage,
  type PublishResult,
  type Publisher,
} from '@justonce/core';
import { createKafkaPublisher } from '@justonce/kafka';

/** What the worker reports when it stops. */
export interface WorkerReport {
  readonly type: 'report';
  readonly published: number;
  readonly cpuUs: number;
  /** Per key: sequence numbers and acceptance times (ms since the epoch, fractional), in publish order. */
  readonly keys: Record<string, Array<[number, number]>>;
  /** Per claim statement: [ms since the relay started, duration ms]. */
  readonly claims: Array<[number, number]>;
  /** The same for each walk over keys (the claim's second statement, when its window gave too few heads). */
  readonly walks: Array<[number, number]>;
}

/** The epoch time in fractional ms, comparable across processes on one machine. */
const now = (): number => performance.timeOrigin + performance.now();

const claims: Array<[number, number]> = [];
const walks: Array<[number, number]> = [];
let relayStarted = 0;

/**
 * Times every claim statement (the one that starts `with oldest`) and key walk (`with
 * recursive walk`) this process sends.
 */
function timeClaims(): void {
  const proto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function query(this: unknown, ...args: unknown[]) {
    const first = args[0] as { text?: unknown } | string | null;
    const text = typeof first === 'string' ? first : String(first?.text ?? '');
    const walk = text.startsWith('with recursive walk');
    // The claim travels packed (packed-rows.ts): its rows statement is inside.
    const claim = text.includes('from (with oldest as materialized');
    if (!walk && !claim) return original.apply(this, args);
    const started = performance.now();
    const done = (): void => {
      if (walk) walks.push([started - relayStarted, performance.now() - started]);
      else claims.push([started - relayStarted, performance.now() - started]);
    };
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const callback = args[last] as (...a: unknown[]) => unknown;
      args[last] = (...a: unknown[]) => {
        done();
        return callback(...a);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (result instanceof Promise) void result.then(done, done);
    return result;
  };
}

/** Wraps `inner`: notes each accepted message's key, sequence number and time. */
function recording(inner: Publisher, keys: Map<string, Array<[number, number]>>) {
  const counter = { published: 0 };
  const publisher: Publisher = {
    async publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
      const results = await inner.publish(messages);
      const at = now();
      messages.forEach((message, i) => {
        if (!results[i]?.ok) return;
        counter.published += 1;
        const { seq } = JSON.parse(Buffer.from(message.payload).toString('utf8')) as {
          seq: number;
        };
        const key = message.key ?? '';
        let list = keys.get(key);
        if (list === undefined) keys.set(key, (list = []));
        list.push([seq, at]);
      });
      return results;
    },
    close: () => inner.close(),
  };
  return { publisher, counter };
}

/** A publisher that accepts everything and does nothing else. */
function countingOnly(): Publisher {
  return {
    publish: (messages) =>
      Promise.resolve(messages.map((m) => ({ messageId: m.messageId, ok: true as const }))),
    close: () => Promise.resolve(),
  };
}

async function main(): Promise<void> {
  timeClaims();
  const send = (message: unknown): void => {
    process.send?.(message);
  };
  const concurrency = Number(process.env.SCALE_CONCURRENCY ?? 2);
  const store = await createStore({
    connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    schema: process.env.SCALE_SCHEMA!,
    pool: { max: concurrency + 2 },
  });
  const kafka = process.env.SCALE_PUBLISHER === 'kafka';
  const inner = kafka
    ? createKafkaPublisher({
        brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:39092').split(','),
        clientId: `relay-scale-${process.pid}`,
      })
    : countingOnly();
  if (kafka) await (inner as ReturnType<typeof createKafkaPublisher>).connect();
  const keys = new Map<string, Array<[number, number]>>();
  const { publisher, counter } = recording(inner, keys);
  const relay = createRelay({
    store,
    publisher,
    batchSize: Number(process.env.SCALE_BATCH ?? 500),
    concurrency,
    notify: false,
    pollIntervalMs: 20,
    logger: {
      debug: () => undefined,
      info: () => undefined,
      warn: (message, fields) => process.stderr.write(`${message} ${JSON.stringify(fields)}\n`),
      error: (message, fields) => process.stderr.write(`${message} ${JSON.stringify(fields)}\n`),
    },
  });
  let cpu = process.cpuUsage();
  let timer: NodeJS.Timeout | undefined;
  process.on('message', (message: { type: string }) => {
    if (message.type === 'start') {
      cpu = process.cpuUsage();
      relayStarted = performance.now();
      void relay.start();
      timer = setInterval(() => send({ type: 'progress', published: counter.published }), 50);
    } else if (message.type === 'stop') {
      clearInterval(timer);
      const used = process.cpuUsage(cpu);
      void relay
        .stop()
        .then(async () => {
          await publisher.close();
          await store.close();
          const report: WorkerReport = {
            type: 'report',
            published: counter.published,
            cpuUs: used.user + used.system,
            keys: Object.fromEntries(keys),
            claims,
            walks,
          };
          // The parent ends this process once it has the report.
          send(report);
        })
        .catch((error: unknown) => {
          process.stderr.write(`stop failed: ${String(error)}\n`);
          process.exit(1);
        });
    }
  });
  send({ type: 'ready' });
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
