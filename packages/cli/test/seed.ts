/**
 * Data for the CLI's tests, made by the real outbox, relay, inbox and operations of
 * @justonce/core (never hand-inserted rows).
 */
import {
  createAdmin,
  createInbox,
  createOperations,
  createOutbox,
  createRelay,
  type Publisher,
  type Store,
} from '@justonce/core';
import { useSchema, type SchemaFixture } from './cli-process';

/**
 * Dead letters of `consumer`: one message per id in `ids` whose handler fails on its only
 * attempt (reason MAX_ATTEMPTS), delivered from `source` (omit it for letters with no
 * source). Bodies are JSON `{ "n": i }`.
 */
export async function deadLetters(
  store: Store,
  consumer: string,
  ids: readonly string[],
  source?: string,
): Promise<void> {
  const inbox = createInbox({ store, consumer, maxAttempts: 1 });
  for (const [i, id] of ids.entries()) {
    await inbox.process(
      {
        id,
        scope: 'default',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ n: i }),
        delivery: source === undefined ? {} : { source },
      },
      async () => {
        throw new Error(`cannot handle ${id}`);
      },
    );
  }
}

/** A publisher that refuses every message for good, so the relay marks them dead. */
const refusing: Publisher = {
  publish: async (messages) =>
    messages.map((m) => ({
      messageId: m.messageId,
      ok: false as const,
      error: new Error('unroutable: no such topic'),
      retriable: false,
    })),
  close: async () => undefined,
};

/** Adds `count` events for `destination` to the outbox; pending until a relay publishes them. */
export async function pendingEvents(
  store: Store,
  destination: string,
  count: number,
): Promise<void> {
  const outbox = createOutbox({ store });
  await store.knex.transaction(async (trx) => {
    await outbox.add(
      trx,
      Array.from({ length: count }, (_, n) => ({ destination, payload: { n } })),
    );
  });
}

/**
 * Adds `count` events for `destination` and runs a relay whose broker refuses them, so they
 * end dead with the broker's error. Events of other destinations pending at that time are
 * marked dead too: call it before adding those.
 */
export async function deadEvents(store: Store, destination: string, count: number): Promise<void> {
  await pendingEvents(store, destination, count);
  const relay = createRelay({ store, publisher: refusing, notify: false });
  while ((await relay.runOnce()).claimed > 0) {
    // Until every pending event was tried.
  }
}

/**
 * The outbox the outbox commands' tests start from: 3 dead events for `orders`, 1 for `emails`
 * and 2 pending for `invoices`.
 */
export async function outboxBacklog(store: Store): Promise<void> {
  await deadEvents(store, 'orders', 3);
  await deadEvents(store, 'emails', 1);
  await pendingEvents(store, 'invoices', 2);
}

/** A test file's schema holding {@link outboxBacklog}. */
export interface OutboxSchema extends SchemaFixture {
  /** The ids of the outbox events of `destination` in `status`, oldest first. */
  readonly idsOf: (status: 'dead' | 'pending', destination: string) => Promise<string[]>;
}

/** The schema of the outbox commands' tests: {@link useSchema} filled by {@link outboxBacklog}. */
export function useOutboxSchema(prefix: string): OutboxSchema {
  const db = useSchema(prefix, outboxBacklog);
  return {
    get store() {
      return db.store;
    },
    inSchema: db.inSchema,
    idsOf: async (status, destination) =>
      (await createAdmin(db.store).outbox.list({ status, destination })).map((e) => e.id),
  };
}

/**
 * An operation record in progress with a lease of 10 minutes (`k-live`) and one whose lease ran out
 * (`k-stuck`), of operation `name`.
 */
export async function operationRecords(store: Store, name: string): Promise<void> {
  await createOperations({ store, operation: name, leaseMs: 600_000 }).reserve('k-live', { a: 1 });
  await createOperations({ store, operation: name, leaseMs: 1000 }).reserve('k-stuck', { a: 2 });
  await new Promise((r) => setTimeout(r, 1200));
}
