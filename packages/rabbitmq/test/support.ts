import type { Store } from '@justonce/core';
import type { SettledEvent } from '@justonce/core';
import type { ConsumeMessage } from 'amqplib';
import type { RabbitConnectionEvent, RabbitConsumer } from '../src';
import { createEffectsTable, effectCounts as countPerMessage } from '../../../test-support/effects';
import { openTestStore } from '../../core/test/db';
import { openAdmin, type Admin } from './broker';
import { useTestBed } from '../../../test-support/test-bed';

/** A settled event as the log keeps it, tagged to tell it from a connection event. */
export type LoggedSettled = { readonly type: 'settled' } & SettledEvent<unknown, ConsumeMessage>;

/** What {@link EventLog} records: the consumer's `onSettled` and `onConnection` events. */
export type LoggedEvent = LoggedSettled | RabbitConnectionEvent;

// The shared effects table, re-exported for the tests that import it from here.
export { createEffectsTable };
export { writeEffect } from '../../../test-support/effects';

/**
 * Applied effects per message id, as a plain object (the shared helper's map, for the tests
 * that match it with `toMatchObject` and `toHaveProperty`).
 */
export async function effectCounts(store: Store): Promise<Record<string, number>> {
  return Object.fromEntries(await countPerMessage(store));
}

/** Collects consumer events and lets a test wait for one. */
export class EventLog {
  readonly events: LoggedEvent[] = [];
  private waiters: Array<{ match: (e: LoggedEvent) => boolean; resolve: () => void }> = [];

  readonly onSettled = (event: SettledEvent<unknown, ConsumeMessage>): void => {
    this.record({ type: 'settled', ...event });
  };

  readonly onConnection = (event: RabbitConnectionEvent): void => {
    this.record(event);
  };

  /** Both hooks, to spread into the consumer's options. */
  get hooks(): {
    onSettled: (event: SettledEvent<unknown, ConsumeMessage>) => void;
    onConnection: (event: RabbitConnectionEvent) => void;
  } {
    return { onSettled: this.onSettled, onConnection: this.onConnection };
  }

  private record(event: LoggedEvent): void {
    this.events.push(event);
    this.waiters = this.waiters.filter((w) => {
      if (!w.match(event)) return true;
      w.resolve();
      return false;
    });
  }

  /** Settled events (`held` included) with the given action, in order. */
  settled(action?: string): LoggedSettled[] {
    return this.events.filter(
      (e): e is LoggedSettled =>
        e.type === 'settled' && (action === undefined || e.action === action),
    );
  }

  /** Resolves at the next event matching `match` (or at once if one was already seen). */
  next(
    what: string,
    match: (e: LoggedEvent) => boolean,
    timeoutMs = 15_000,
    includePast = false,
  ): Promise<void> {
    if (includePast && this.events.some(match)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
        timeoutMs,
      );
      this.waiters.push({
        match,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

/** A promise with its resolver, for gating handlers. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * Stops each consumer of `running` (emptying it) and removes the queues and the exchange it
 * declared: a test file's clean-up after each test.
 */
export async function stopAndRemove(admin: Admin, running: RabbitConsumer[]): Promise<void> {
  for (const consumer of running.splice(0)) {
    await consumer.stop();
    const t = consumer.topology();
    await admin.remove({
      queues: [t.queue, ...t.retryQueues, ...(t.deadLetterQueue ? [t.deadLetterQueue] : [])],
      exchanges: [t.deadLetterExchange],
    });
  }
}

/** What {@link useRabbitTestBed} opens for a test file. */
export interface RabbitTestBed {
  /** A PostgreSQL store with the shared effects table. */
  readonly store: Awaited<ReturnType<typeof openTestStore>>;
  readonly admin: Admin;
  /** Consumers to stop after each test, their queues and exchanges removed. */
  readonly running: RabbitConsumer[];
}

/**
 * Opens a PostgreSQL store with the effects table and a broker admin before a test file's
 * tests; after each test stops the consumers pushed onto `running` and removes what they
 * declared; closes both after them all. Read the fields inside hooks and tests.
 */
export function useRabbitTestBed(): RabbitTestBed {
  return useTestBed<RabbitTestBed>({
    open: async () => {
      const store = await openTestStore('postgres');
      await createEffectsTable(store);
      return { store, admin: await openAdmin(), running: [] };
    },
    afterEachTest: ({ admin, running }) => stopAndRemove(admin, running),
    close: async ({ admin, store }) => {
      await admin.close();
      await store.dispose();
    },
  });
}
