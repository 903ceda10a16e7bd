import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import { createInbox } from '../inbox/create-inbox';
import { INBOX_BACKOFF_KEYS, INBOX_OPTION_KEYS } from '../inbox/options';
import type { Handler, Inbox, InboxOptions } from '../inbox/types';
import { createStore, type Store } from '../store/store';
import { checkCount } from './faults';
import type { FaultInjector } from './faults';
import {
  createMemoryBroker,
  rejectUnknownBrokerOptions,
  type DeadLetteredMessage,
  type DeliveryRecord,
  type MemoryBroker,
  type MemoryBrokerOptions,
  type WhenIdleOptions,
} from './memory-broker';

/** A message for {@link TestHarness.publish}. */
export interface TestMessage {
  /** The message id; omit it to test a message that arrives without one. */
  readonly id: string | undefined;
  /** Strings and bytes are sent as given; any other value is sent as JSON. Default `''`. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  readonly key?: string | null;
  readonly scope?: string;
}

/** Options of {@link createTestHarness}. */
export interface TestHarnessOptions<R = unknown> {
  /** The handler under test. */
  readonly handler: Handler<R>;
  /** Consumer name of the inbox. Default `test-consumer`. */
  readonly consumer?: string;
  /** Queue the harness publishes to and consumes. Default: the consumer name. */
  readonly queue?: string;
  /**
   * The store to use; the harness neither migrates nor closes one you pass. Default: a new
   * in-memory PGlite store, migrated, closed by {@link TestHarness.close}.
   */
  readonly store?: Store;
  /** Runs once the store is ready and before anything is consumed: create business tables here. */
  readonly setup?: (store: Store) => Promise<void>;
  /**
   * Further inbox options (`maxAttempts`, `decode`, …). An `onStep` given here runs before the
   * broker's crash injection.
   */
  readonly inbox?: Omit<InboxOptions, 'store' | 'consumer'>;
  /** Deliveries running at once. Default 4. */
  readonly concurrency?: number;
  /**
   * Broker options. Defaults suited to tests: `crashRedeliveryDelayMs` 1, `maxRetryDelayMs` 10,
   * `maxReceiveCount` 50 (a safety net so a stuck message ends in the dead-letter list).
   */
  readonly broker?: MemoryBrokerOptions;
  /**
   * Counts the business effects that committed, e.g. rows of your own table. Default: the
   * number of handler runs whose transaction committed.
   */
  readonly countEffects?: (store: Store) => Promise<number>;
  /** Default bound of {@link TestHarness.runUntilIdle}. Default 30 000 ms. */
  readonly idleTimeoutMs?: number;
}

/** What happened so far, from the broker's and the handler's side. */
export interface HarnessCounts {
  /** Messages published through the harness or the broker. */
  readonly published: number;
  /** Deliveries made, duplicates and redeliveries included. */
  readonly deliveries: number;
  /**
   * Deliveries acknowledged with a `processed` outcome. A delivery that committed and then
   * crashed before its acknowledgement counts as `crashed`; its redelivery as a duplicate.
   */
  readonly processed: number;
  /** Deliveries the inbox recognised as duplicates. */
  readonly duplicates: number;
  /** Deliveries that failed and were redelivered. */
  readonly failed: number;
  /** Deliveries that crashed (injected or not). */
  readonly crashed: number;
  /** Messages dead-lettered, by the inbox or by the broker's receive limit. */
  readonly deadLetters: number;
  /** Times the handler was called, rolled-back runs included. */
  readonly handlerRuns: number;
  /** Business effects that committed ({@link TestHarnessOptions.countEffects}). */
  readonly effects: number;
}

/**
 * A store, an in-memory broker and an inbox wired together around one handler, for a
 * user's own tests of effectively-once behaviour.
 */
export interface TestHarness {
  readonly store: Store;
  readonly broker: MemoryBroker;
  readonly inbox: Inbox;
  /** The queue the harness publishes to and consumes. */
  readonly queue: string;
  /** Explicit fault injection (the broker's). */
  readonly faults: FaultInjector;
  /** Publishes messages to the harness's queue; delivery starts at once. */
  publish(messages: TestMessage | readonly TestMessage[]): void;
  /**
   * Waits until nothing is running, queued or waiting for a redelivery, then returns the
   * counts. Event-driven; rejects with `IdleTimeoutError` after the timeout.
   */
  runUntilIdle(options?: WhenIdleOptions): Promise<HarnessCounts>;
  /** The counts now. */
  counts(): Promise<HarnessCounts>;
  /** Every settled delivery with its outcome, in order. */
  readonly outcomes: readonly DeliveryRecord[];
  /** Messages the queue dead-lettered. */
  deadLetters(): readonly DeadLetteredMessage[];
  /** Stops the consumer and the broker; closes the store if the harness opened it. Idempotent. */
  close(): Promise<void>;
}

const HARNESS_KEYS = optionKeys<TestHarnessOptions>()([
  'handler',
  'consumer',
  'queue',
  'store',
  'setup',
  'inbox',
  'concurrency',
  'broker',
  'countEffects',
  'idleTimeoutMs',
]);
/** The inbox options the harness takes: all but the two it sets itself. */
const HARNESS_INBOX_KEYS = INBOX_OPTION_KEYS.filter((key) => key !== 'store' && key !== 'consumer');

/** Refuses unknown keys, in the options and in the inbox and broker options they carry. */
function rejectUnknownHarnessOptions(options: TestHarnessOptions<unknown>): void {
  const context = 'createTestHarness';
  rejectUnknownOptions(options, HARNESS_KEYS, context);
  rejectUnknownOptions(options.inbox, HARNESS_INBOX_KEYS, context, 'inbox');
  rejectUnknownOptions(options.inbox?.backoff, INBOX_BACKOFF_KEYS, context, 'inbox.backoff');
  rejectUnknownBrokerOptions(options.broker, context, 'broker');
}

function encodeBody(body: unknown): Uint8Array | string {
  if (body === undefined) return '';
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  return JSON.stringify(body);
}

/**
 * Creates a {@link TestHarness}: opens (or takes) a store, runs `setup`, builds the inbox with
 * the broker's crash hook and starts consuming.
 *
 * @example
 * ```ts
 * const harness = await createTestHarness({
 *   consumer: 'payments',
 *   setup: (store) => store.knex.raw('create table charges (message_id text)'),
 *   handler: ({ trx, messageId }) => trx.raw('insert into charges values (?)', [messageId]),
 * });
 * harness.faults.crash('handler-done', 'm-1');
 * harness.publish({ id: 'm-1', body: { amount: 100 } });
 * const counts = await harness.runUntilIdle();
 * expect(counts.effects).toBe(1);
 * await harness.close();
 * ```
 */
export async function createTestHarness<R>(options: TestHarnessOptions<R>): Promise<TestHarness> {
  rejectUnknownHarnessOptions(options as TestHarnessOptions<unknown>);
  if (typeof options?.handler !== 'function') {
    throw new ConfigurationError('createTestHarness needs a handler function');
  }
  const consumer = options.consumer ?? 'test-consumer';
  const queue = options.queue ?? consumer;
  const concurrency = checkCount('concurrency', options.concurrency ?? 4);
  const idleTimeoutMs = checkCount('idleTimeoutMs', options.idleTimeoutMs ?? 30_000);
  const broker = createMemoryBroker({
    crashRedeliveryDelayMs: 1,
    maxRetryDelayMs: 10,
    maxReceiveCount: 50,
    ...options.broker,
  });

  const ownsStore = options.store === undefined;
  const store = options.store ?? (await createStore({ pglite: {} }));
  let handlerRuns = 0;
  let committedRuns = 0;
  try {
    if (ownsStore) await store.migrate();
    await options.setup?.(store);
    const userStep = options.inbox?.onStep;
    const inbox = createInbox({
      ...options.inbox,
      store,
      consumer,
      onStep:
        userStep === undefined
          ? broker.onStep
          : async (step, messageId) => {
              await userStep(step, messageId);
              broker.onStep(step, messageId);
            },
    });
    const handler: Handler<R> = (ctx) => {
      handlerRuns += 1;
      ctx.trx.executionPromise.then(
        () => {
          committedRuns += 1;
        },
        () => undefined,
      );
      return options.handler(ctx);
    };
    // No broker fallback id: a message published without an id is dead-lettered
    // (MISSING_MESSAGE_ID), which is what a test of a handler wants to see.
    const consumerHandle = broker.consume(queue, {
      inbox,
      handler,
      concurrency,
      messageId: { fallback: false },
    });
    await consumerHandle.start();

    const counts = async (): Promise<HarnessCounts> => {
      const stats = broker.stats(queue);
      return {
        published: stats.published,
        deliveries: stats.deliveries,
        processed: stats.processed,
        duplicates: stats.duplicates,
        failed: stats.failed,
        crashed: stats.crashed,
        deadLetters: stats.deadLettered + stats.redriven,
        handlerRuns,
        effects: options.countEffects ? await options.countEffects(store) : committedRuns,
      };
    };
    let closed = false;
    return {
      store,
      broker,
      inbox,
      queue,
      faults: broker.faults,
      publish(messages) {
        const list: readonly TestMessage[] = Array.isArray(messages)
          ? messages
          : [messages as TestMessage];
        broker.send(
          queue,
          list.map((m) => ({
            id: m.id,
            body: encodeBody(m.body),
            ...(m.headers === undefined ? {} : { headers: m.headers }),
            ...(m.key === undefined ? {} : { key: m.key }),
            ...(m.scope === undefined ? {} : { scope: m.scope }),
          })),
        );
      },
      async runUntilIdle(idleOptions = {}) {
        await broker.whenIdle({ timeoutMs: idleTimeoutMs, ...idleOptions });
        return counts();
      },
      counts,
      outcomes: broker.log,
      deadLetters: () => broker.deadLetters(queue),
      async close() {
        if (closed) return;
        closed = true;
        await consumerHandle.stop();
        await inbox.flushActivity();
        await broker.close();
        if (ownsStore) await store.close();
      },
    };
  } catch (error) {
    await broker.close();
    if (ownsStore) await store.close();
    throw error;
  }
}
